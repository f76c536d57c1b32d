package feeds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/relaybell/relaybell/netpolicy"
)

// Defaults of a fetch.
const (
	DefaultTimeout      = 20 * time.Second
	DefaultMaxBody      = 5 << 20 // 5 MiB
	DefaultMaxRedirects = 5
	// MaxItems bounds the items one fetch reads: a feed listing more is
	// read to its MaxItems newest.
	MaxItems = 200
)

// FetchConfig tunes a Fetcher; the zero value is the defaults.
type FetchConfig struct {
	// Timeout bounds a whole fetch, redirects and body included; default
	// DefaultTimeout.
	Timeout time.Duration
	// MaxBody is the largest body read, in bytes; default DefaultMaxBody.
	MaxBody int64
	// MaxRedirects is how many redirects a fetch follows; default
	// DefaultMaxRedirects.
	MaxRedirects int
	// Allow lists host:port pairs reachable on private addresses (the
	// webhooks' RELAYBELL_WEBHOOK_ALLOW_HOSTS).
	Allow netpolicy.AllowList
	// UserAgent is sent with every fetch; default "RelayBell feed poller".
	UserAgent string
}

// Fetcher fetches feeds with the private-address rules of webhooks: only
// public addresses, or allow-listed host:port pairs, are connected to,
// checked on the resolved address right before connecting, on every
// redirect too.
type Fetcher struct {
	cfg    FetchConfig
	client *http.Client
}

// NewFetcher returns a fetcher.
func NewFetcher(cfg FetchConfig) *Fetcher {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxRedirects <= 0 {
		cfg.MaxRedirects = DefaultMaxRedirects
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "RelayBell feed poller"
	}
	dialer := &netpolicy.Dialer{Allow: cfg.Allow}
	max := cfg.MaxRedirects
	return &Fetcher{cfg: cfg, client: &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil, // a proxy would dial for us, unchecked
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   cfg.Timeout,
			ResponseHeaderTimeout: cfg.Timeout,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > max {
				return fmt.Errorf("stopped after %d redirects", max)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirected to a %s address", req.URL.Scheme)
			}
			return nil
		},
	}}
}

// Fetched is the outcome of a fetch.
type Fetched struct {
	Status       int  // the answer's HTTP status; 0 when none came
	NotModified  bool // 304: nothing changed since the validators
	ETag         string
	LastModified string
	Items        []Item // newest first, as the feed lists them
}

// Fetch gets the feed at url, conditionally when etag or lastModified is
// set, and parses it. A failure returns the status it got (0 for none) and
// an error whose text says why, in the words the feed's lastPoll shows.
func (f *Fetcher) Fetch(ctx context.Context, url, etag, lastModified string) (Fetched, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Fetched{}, fmt.Errorf("invalid feed address: %w", err)
	}
	req.Header.Set("User-Agent", f.cfg.UserAgent)
	req.Header.Set("Accept", "application/rss+xml, application/atom+xml, application/feed+json, application/json, application/xml, text/xml;q=0.9, */*;q=0.8")
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	if lastModified != "" {
		req.Header.Set("If-Modified-Since", lastModified)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return Fetched{}, errors.New(fetchError(err))
	}
	defer func() {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	out := Fetched{Status: resp.StatusCode, ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
	switch {
	case resp.StatusCode == http.StatusNotModified:
		out.NotModified, out.ETag, out.LastModified = true, etag, lastModified
		return out, nil
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return out, fmt.Errorf("the feed answered %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.cfg.MaxBody+1))
	if err != nil {
		return out, errors.New(fetchError(err))
	}
	if int64(len(body)) > f.cfg.MaxBody {
		return out, fmt.Errorf("the feed is larger than %d bytes", f.cfg.MaxBody)
	}
	items, err := Parse(body)
	if err != nil {
		return out, err
	}
	out.Items = items
	return out, nil
}

// Parse reads an RSS 2.0, Atom or JSON feed's items, newest first, at
// most MaxItems.
func Parse(body []byte) ([]Item, error) {
	p := gofeed.NewParser()
	feed, err := p.Parse(strings.NewReader(string(body)))
	if err != nil {
		return nil, fmt.Errorf("not an RSS, Atom or JSON feed: %s", parseError(err))
	}
	list := slices.DeleteFunc(slices.Clone(feed.Items), func(g *gofeed.Item) bool { return g == nil })
	// Newest first: by date when every item has one (a feed may list its
	// oldest first), else in the feed's order.
	if !slices.ContainsFunc(list, func(g *gofeed.Item) bool { return published(g) == nil }) {
		slices.SortStableFunc(list, func(a, b *gofeed.Item) int { return published(b).Compare(*published(a)) })
	}
	items := make([]Item, 0, min(len(list), MaxItems))
	for _, g := range list[:min(len(list), MaxItems)] {
		items = append(items, itemOf(g))
	}
	return items, nil
}

// published is when an item was published, else updated; nil when it
// says neither.
func published(g *gofeed.Item) *time.Time {
	if g.PublishedParsed != nil {
		return g.PublishedParsed
	}
	return g.UpdatedParsed
}

// parseError is the parser's message, one line and bounded.
func parseError(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// fetchError says why a fetch got no answer.
func fetchError(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, netpolicy.ErrPrivateAddress):
		return "refused: the address is private or internal and not allow-listed"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout: no answer in time"
	}
	return err.Error()
}
