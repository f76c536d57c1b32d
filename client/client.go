// Package client is RelayBell's server SDK for Go, version 1.2.0. It
// depends on the standard library only, so customers can vendor it alone.
//
// A Client calls the REST API under /api/v1 with an API key. Every
// operation a key can call has a typed method, generated from
// api/openapi.json into api_gen.go (see internal/gen for the rules), for
// example CreateTemplate, ListSegments or GetReports; Do, Get, Post, Put
// and Delete remain for calls with the caller's own types. Errors of the
// API come back as *Error with Code, Required and RequestID. Idempotent
// calls (GET, HEAD, PUT, DELETE) and POST /events with an Idempotency-Key
// are retried with exponential backoff on 429 (after Retry-After) and 5xx.
// Pages and the generated iterators (Notifications, Audience,
// WebhookDeliveries) follow the cursors of paged lists. Verifier checks
// RelayBell's webhook signatures.
package client

//go:generate go run ./internal/gen/cmd ../api/openapi.json api_gen.go

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Version is the SDK's version; it is sent in the User-Agent.
const Version = "1.2.0"

// UserAgent is the User-Agent header every request carries.
const UserAgent = "relaybell-go/" + Version

// Client calls one RelayBell service with one API key. Its zero value is
// not usable; build it with New.
type Client struct {
	// BaseURL is the service's base URL, without /api/v1.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <APIKey>".
	APIKey string
	// HTTPClient makes the requests; http.DefaultClient when nil.
	HTTPClient *http.Client
	// MaxRetries is how many times a retryable call is retried (default 3
	// from New; 0 turns retries off).
	MaxRetries int
	// BaseBackoff is the first retry's wait when no Retry-After is given;
	// each further retry doubles it, up to MaxBackoff.
	BaseBackoff, MaxBackoff time.Duration
	// Sleep waits between retries; tests replace it. nil waits on a timer
	// that the context cancels.
	Sleep func(ctx context.Context, d time.Duration) error
}

// New returns a Client for the service at baseURL (for example
// "https://push.example.com") with the API key apiKey.
func New(baseURL, apiKey string) *Client {
	return &Client{
		BaseURL:     strings.TrimRight(baseURL, "/"),
		APIKey:      apiKey,
		MaxRetries:  3,
		BaseBackoff: 500 * time.Millisecond,
		MaxBackoff:  30 * time.Second,
	}
}

// Error is an error answer of the API (spec 7).
type Error struct {
	// Status is the HTTP status.
	Status int `json:"-"`
	// Code is the catalog's code, for example "insufficient_scope".
	Code    string `json:"error"`
	Message string `json:"message,omitempty"`
	// Required is the scope a 403 insufficient_scope lacked.
	Required  string `json:"required,omitempty"`
	RequestID string `json:"request_id"`
	// RetryAfter is the Retry-After header of a 429, if any.
	RetryAfter time.Duration `json:"-"`
	// Body is the raw answer.
	Body []byte `json:"-"`
}

func (e *Error) Error() string {
	s := fmt.Sprintf("relaybell: %d %s", e.Status, e.Code)
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Required != "" {
		s += " (required " + e.Required + ")"
	}
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	return s
}

// IsCode reports whether err is an *Error with the code code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// Request is one call. Body is marshalled to JSON unless it is nil or
// ContentType is set.
type Request struct {
	Method string
	// Path is under /api/v1, for example "/notifications".
	Path  string
	Query url.Values
	Body  any
	// ContentType, when set, sends Body (a []byte) as is with this type.
	ContentType string
	// IdempotencyKey is sent as Idempotency-Key; with it POST /events is
	// retried like an idempotent call.
	IdempotencyKey string
	Header         http.Header
}

// Do sends req and decodes a JSON answer into out (when out is not nil);
// an out of type *[]byte receives the answer as is (a CSV export). A
// non-2xx answer is an *Error.
func (c *Client) Do(ctx context.Context, req Request, out any) error {
	var body []byte
	if req.ContentType != "" {
		raw, ok := req.Body.([]byte)
		if !ok {
			return fmt.Errorf("relaybell: a %s body must be []byte", req.ContentType)
		}
		body = raw
	} else if req.Body != nil {
		var err error
		if body, err = json.Marshal(req.Body); err != nil {
			return fmt.Errorf("relaybell: encode request: %w", err)
		}
	}
	u := c.BaseURL + "/api/v1" + req.Path
	if len(req.Query) > 0 {
		u += "?" + req.Query.Encode()
	}
	retryable := c.retryable(req)
	for attempt := 0; ; attempt++ {
		data, err := c.once(ctx, req, u, body)
		if err == nil {
			if raw, ok := out.(*[]byte); ok {
				*raw = data
				return nil
			}
			if out != nil && len(data) > 0 {
				if err := json.Unmarshal(data, out); err != nil {
					return fmt.Errorf("relaybell: decode %s %s answer: %w", req.Method, req.Path, err)
				}
			}
			return nil
		}
		if !retryable || attempt >= c.MaxRetries || !shouldRetry(err) || ctx.Err() != nil {
			return err
		}
		if err := c.sleep(ctx, c.backoff(attempt, err)); err != nil {
			return err
		}
	}
}

func (c *Client) retryable(req Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodDelete, http.MethodOptions:
		return true
	case http.MethodPut:
		// PUT /settings may rotate the commerce signing secret: a retry of
		// one that was applied, its answer lost, would rotate again and
		// end the old secret's 24 hours at once.
		return req.Path != "/settings"
	case http.MethodPost:
		return req.IdempotencyKey != "" && req.Path == "/events"
	}
	return false
}

// shouldRetry: 429, 5xx, and transport errors (no answer).
func shouldRetry(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Status == http.StatusTooManyRequests || e.Status >= 500
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

func (c *Client) backoff(attempt int, err error) time.Duration {
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter
	}
	d := c.BaseBackoff << attempt
	if c.MaxBackoff > 0 && (d > c.MaxBackoff || d <= 0) {
		d = c.MaxBackoff
	}
	if d <= 0 {
		return 0
	}
	// Full jitter on the upper half so concurrent clients spread out.
	return d/2 + rand.N(d/2+1)
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Client) once(ctx context.Context, req Request, u string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("relaybell: %w", err)
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	hr.Header.Set("Authorization", "Bearer "+c.APIKey)
	hr.Header.Set("User-Agent", UserAgent)
	hr.Header.Set("Accept", "application/json")
	switch {
	case req.ContentType != "":
		hr.Header.Set("Content-Type", req.ContentType)
	case body != nil:
		hr.Header.Set("Content-Type", "application/json")
	}
	if req.IdempotencyKey != "" {
		hr.Header.Set("Idempotency-Key", req.IdempotencyKey)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("relaybell: %s %s: %w", req.Method, req.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("relaybell: %s %s: read answer: %w", req.Method, req.Path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return data, nil
	}
	e := &Error{Status: resp.StatusCode, Body: data}
	_ = json.Unmarshal(data, e)
	if e.Code == "" {
		e.Code = http.StatusText(resp.StatusCode)
	}
	if e.RequestID == "" {
		e.RequestID = resp.Header.Get("X-Request-Id")
	}
	if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(resp.Header.Get("Retry-After")); err == nil {
		e.RetryAfter = max(time.Until(t), 0)
	}
	return nil, e
}

// Get calls GET path with query and decodes the answer into out.
func (c *Client) Get(ctx context.Context, path string, query url.Values, out any) error {
	return c.Do(ctx, Request{Method: http.MethodGet, Path: path, Query: query}, out)
}

// Post calls POST path with body and decodes the answer into out.
func (c *Client) Post(ctx context.Context, path string, body, out any) error {
	return c.Do(ctx, Request{Method: http.MethodPost, Path: path, Body: body}, out)
}

// Put calls PUT path with body and decodes the answer into out.
func (c *Client) Put(ctx context.Context, path string, body, out any) error {
	return c.Do(ctx, Request{Method: http.MethodPut, Path: path, Body: body}, out)
}

// Delete calls DELETE path and decodes the answer (if any) into out.
func (c *Client) Delete(ctx context.Context, path string, out any) error {
	return c.Do(ctx, Request{Method: http.MethodDelete, Path: path}, out)
}
