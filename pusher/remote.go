package pusher

import (
	"bytes"
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// BatchPath is where a pusher node takes batches from fan-out nodes.
const BatchPath = "/internal/v1/batches"

// maxBatchBody bounds a batch request (500 recipients are about 170 KB).
const maxBatchBody = 8 << 20

// readBody reads r's body of at most max bytes, and reports whether it
// was longer. A body of a declared length (fan-out's batches have one) is
// read into one buffer of that length: io.ReadAll reached a batch's 170 KB
// by doubling from 512 bytes, allocating, copying and clearing about twice
// the body for each batch (BenchmarkReadBody).
func readBody(r *http.Request, max int64) (data []byte, tooLarge bool, err error) {
	if n := r.ContentLength; n >= 0 && n <= max {
		data = make([]byte, n)
		if _, err := io.ReadFull(r.Body, data); err != nil {
			return nil, false, err
		}
		return data, false, nil
	}
	data, err = io.ReadAll(io.LimitReader(r.Body, max+1))
	return data, int64(len(data)) > max, err
}

// Handler serves BatchPath: it pushes the posted batch and answers 204 once
// every outcome is recorded, 401 without the cluster token, and 503 when
// the batch could not be done (the caller retries or re-routes it). A batch
// runs to its end even if the caller disconnects.
func Handler(p *Pusher, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if !authorized(r.Header.Get("Authorization"), token) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		data, tooLarge, err := readBody(r, maxBatchBody)
		if err != nil {
			http.Error(w, "batch not read", http.StatusBadRequest)
			return
		}
		if tooLarge {
			http.Error(w, "batch too large", http.StatusRequestEntityTooLarge)
			return
		}
		b, err := decodeBatch(data)
		if err != nil || b.NotificationID == "" || b.WebsiteID == "" {
			http.Error(w, "bad batch", http.StatusBadRequest)
			return
		}
		// The batch is finished and recorded even when the caller goes away
		// (a fan-out node that died): pushes already sent must be recorded,
		// or the batch's redo would send them again.
		if err := p.Push(context.WithoutCancel(r.Context()), b); err != nil {
			p.logger.Warn("pusher: batch not done", "notification", b.NotificationID, "err", err)
			http.Error(w, "batch not done", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func authorized(header, token string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	return ok && token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// Remote sends batches to a pusher node's BatchPath.
type Remote struct {
	url    string
	token  string
	client *http.Client
}

// NewRemote returns a client for the pusher node at baseURL
// (e.g. http://10.0.0.7:8080). client may be nil for a default one.
func NewRemote(baseURL, token string, client *http.Client) *Remote {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Minute}
	}
	return &Remote{url: strings.TrimSuffix(baseURL, "/") + BatchPath, token: token, client: client}
}

// Push delivers b through the remote node; nil means every outcome is recorded.
func (r *Remote) Push(ctx context.Context, b Batch) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(encodeBatch(nil, b)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", batchContentType)
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("pushing batch to %s: %w", r.url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("pushing batch to %s: %d %s", r.url, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}
