package pusher

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/webpush/webpushtest"
)

func TestRemoteBatch(t *testing.T) {
	r := newRig(t, Config{})
	b1, rc1 := r.browser(webpushtest.Behavior{})
	b2, rc2 := r.browser(webpushtest.Behavior{})
	srv := httptest.NewServer(Handler(r.p, "cluster-secret"))
	defer srv.Close()
	batch := Batch{NotificationID: r.n.ID, WebsiteID: r.site.ID, Recipients: []store.Recipient{rc1, rc2}}

	if err := NewRemote(srv.URL, "wrong", nil).Push(context.Background(), batch); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong token: %v", err)
	}
	if len(b1.Received()) != 0 {
		t.Fatal("an unauthorized batch was pushed")
	}
	if err := NewRemote(srv.URL, "cluster-secret", nil).Push(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if len(b1.Received()) != 1 || len(b2.Received()) != 1 || r.counters().Sent != 2 {
		t.Fatalf("remote batch: %d %d %+v", len(b1.Received()), len(b2.Received()), r.counters())
	}

	resp, err := http.Post(srv.URL+BatchPath, "application/json", strings.NewReader(`{"notificationId":`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+BatchPath, strings.NewReader(`{"notificationId":`))
	req.Header.Set("Authorization", "Bearer cluster-secret")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad body: %d", resp.StatusCode)
	}
}

func TestRemoteBatchNotDoneIs503(t *testing.T) {
	r := newRig(t, Config{})
	_, rc := r.browser(webpushtest.Behavior{Delay: 5 * time.Second})
	srv := httptest.NewServer(Handler(r.p, "s"))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := NewRemote(srv.URL, "s", nil).Push(ctx, Batch{NotificationID: r.n.ID, WebsiteID: r.site.ID, Recipients: []store.Recipient{rc}})
	if err == nil {
		t.Fatal("a batch cut short reported done")
	}
	if got := r.counters(); got.Processed != 0 {
		t.Fatalf("a batch cut short recorded results: %+v", got)
	}
}

// TestReadBody: a batch's body is read whole when it fits, refused past
// the bound whether or not it declares its length, and a body shorter
// than it declared is an error.
func TestReadBody(t *testing.T) {
	body := strings.Repeat("b", 100)
	for _, c := range []struct {
		name     string
		length   int64 // the declared length; -1 none
		body     string
		want     string
		tooLarge bool
		err      bool
	}{
		{"declared", 100, body, body, false, false},
		{"not declared", -1, body, body, false, false},
		{"empty", 0, "", "", false, false},
		{"declared past the bound", 101, body + "b", "", true, false},
		{"not declared, past the bound", -1, body + "b", "", true, false},
		{"shorter than declared", 100, body[:60], "", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, BatchPath, io.NopCloser(strings.NewReader(c.body)))
			r.ContentLength = c.length
			data, tooLarge, err := readBody(r, 100)
			if (err != nil) != c.err || tooLarge != c.tooLarge || !c.tooLarge && !c.err && string(data) != c.want {
				t.Fatalf("readBody = %d bytes, tooLarge %v, err %v; want %q, %v, err %v", len(data), tooLarge, err, c.want, c.tooLarge, c.err)
			}
		})
	}
}

// BenchmarkReadBody reads a batch's body of about 170 KB (500
// recipients) as the handler does, against io.ReadAll of the same:
//
//	go test -run '^$' -bench BenchmarkReadBody -benchmem ./pusher/
func BenchmarkReadBody(b *testing.B) {
	body := bytes.Repeat([]byte("r"), 170<<10)
	request := func() *http.Request {
		r := httptest.NewRequest(http.MethodPost, BatchPath, bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		return r
	}
	b.Run("ReadAll", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := io.ReadAll(io.LimitReader(request().Body, maxBatchBody+1)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("readBody", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := readBody(request(), maxBatchBody); err != nil {
				b.Fatal(err)
			}
		}
	})
}
