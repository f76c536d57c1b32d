package api

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// post sends one notification body with a key and returns the answer.
func (h *harness) post(key, body string) response {
	h.t.Helper()
	return h.do("POST", "/api/v1/notifications", body, auth(key)...)
}

// expectRateHeaders checks the RateLimit-* headers of an answer.
func expectRateHeaders(t *testing.T, r response, limit, remaining, reset int) {
	t.Helper()
	got := fmt.Sprintf("%s/%s/%s", r.header["Ratelimit-Limit"], r.header["Ratelimit-Remaining"], r.header["Ratelimit-Reset"])
	if want := fmt.Sprintf("%d/%d/%d", limit, remaining, reset); got != want {
		t.Fatalf("RateLimit limit/remaining/reset %s, want %s (status %d, body %s)", got, want, r.status, r.body)
	}
}

func TestSendRatePerKeyMinute(t *testing.T) {
	h := newHarness(t)
	h.clock.Add(15 * time.Second) // 12:00:15, 45 s left in the minute
	key := h.site.APIKey
	for i := 1; i <= sendsPerMinute; i++ {
		r := h.post(key, fmt.Sprintf(`{"title":"hi","externalId":"user-%d"}`, i))
		if r.status != 202 {
			t.Fatalf("send %d: %d %s", i, r.status, r.body)
		}
		if i == 1 {
			expectRateHeaders(t, r, 60, 59, 45)
		}
	}
	before := h.notificationCount()
	r := h.post(key, `{"title":"one too many","externalId":"user-x"}`)
	expectError(t, r, 429, CodeRateLimited, `,"message":"this key may send 60 times a minute and 600 times an hour"`)
	if r.header["Retry-After"] != "45" {
		t.Fatalf("Retry-After %q, want 45", r.header["Retry-After"])
	}
	expectRateHeaders(t, r, 60, 0, 45)
	if n := h.notificationCount(); n != before {
		t.Fatalf("a refused send was stored: %d notifications, had %d", n, before)
	}

	// Draft saves are not counted and still pass; they report the key's rate.
	r = h.post(key, `{"title":"later","draft":true}`)
	if r.status != 201 {
		t.Fatalf("draft while limited: %d %s", r.status, r.body)
	}
	expectRateHeaders(t, r, 60, 0, 45)
	draft := r.json(t)["notificationId"].(string)
	// Editing it is no limited route; sending it is counted.
	if r := h.do("PATCH", "/api/v1/notifications/"+draft, `{"body":"x"}`, auth(key)...); r.status != 200 || r.header["Ratelimit-Limit"] != "" {
		t.Fatalf("PATCH while limited: %d %v %s", r.status, r.header, r.body)
	}
	r = h.do("POST", "/api/v1/notifications/"+draft+"/send", `{"externalId":"u"}`, auth(key)...)
	expectCode(t, r, 429, CodeRateLimited)

	// Another key of the same website has its own rate.
	other := h.key([]string{"send"}, nil)
	if r := h.post(other, `{"title":"other key","externalId":"u"}`); r.status != 202 {
		t.Fatalf("other key: %d %s", r.status, r.body)
	}

	// The next minute frees the key again.
	h.clock.Add(45 * time.Second)
	r = h.do("POST", "/api/v1/notifications/"+draft+"/send", `{"externalId":"u"}`, auth(key)...)
	if r.status != 202 {
		t.Fatalf("next minute: %d %s", r.status, r.body)
	}
	expectRateHeaders(t, r, 60, 59, 60)
}

func TestSendRatePerKeyHour(t *testing.T) {
	h := newHarness(t)
	key := h.site.APIKey
	for i := 1; i <= sendsPerHour; i++ {
		if r := h.post(key, `{"title":"hi","externalIds":["a","b"]}`); r.status != 202 {
			t.Fatalf("send %d: %d %s", i, r.status, r.body)
		}
		if i%sendsPerMinute == 0 {
			h.clock.Add(time.Minute)
		}
	}
	// 12:10:00: the minute is fresh, the hour is used up until 13:00.
	r := h.post(key, `{"title":"hi","externalId":"a"}`)
	expectCode(t, r, 429, CodeRateLimited)
	if r.header["Retry-After"] != "3000" {
		t.Fatalf("Retry-After %q, want 3000", r.header["Retry-After"])
	}
	expectRateHeaders(t, r, 600, 0, 3000)
}

func TestBroadcastBudget(t *testing.T) {
	h := newHarness(t)
	h.clock.Add(20 * time.Minute) // 12:20
	seg := h.createSegment(t, "Fans", `{"rules":[{"field":"country","value":"FR"}]}`)
	topic := h.do("POST", "/api/v1/topics", `{"name":"News"}`, auth(h.site.APIKey)...)
	if topic.status != 201 {
		t.Fatalf("topic: %d %s", topic.status, topic.body)
	}
	// Every kind of broadcast draws on the same 30.
	bodies := []string{
		`{"title":"all"}`,
		`{"title":"segment","segmentId":"` + seg + `"}`,
		`{"title":"filters","filters":{"rules":[{"field":"language","value":"fr"}]}}`,
		`{"title":"topic","topicId":"news"}`,
		`{"title":"scheduled","sendAt":"2026-03-02T09:00:00Z"}`,
		`{"title":"transactional to all","transactional":true}`,
	}
	for i := range broadcastsPerHour {
		r := h.post(h.site.APIKey, bodies[i%len(bodies)])
		if r.status != 202 {
			t.Fatalf("broadcast %d: %d %s", i+1, r.status, r.body)
		}
		if i == 0 {
			expectRateHeaders(t, r, 30, 29, 2400) // the closest to running out
		}
	}
	before := h.notificationCount()
	r := h.post(h.site.APIKey, `{"title":"31st"}`)
	expectError(t, r, 429, CodeSendLimitReached,
		`,"message":"the website's hourly budget of 30 broadcast sends is used up","limit":30,"kind":"broadcast","retryAfter":2400`)
	if r.header["Retry-After"] != "2400" {
		t.Fatalf("Retry-After %q, want 2400", r.header["Retry-After"])
	}
	expectRateHeaders(t, r, 30, 0, 2400)
	if n := h.notificationCount(); n != before {
		t.Fatalf("a refused send was stored")
	}
	// Another key of the website shares the budget.
	expectCode(t, h.post(h.key([]string{"send"}, nil), `{"title":"other key"}`), 429, CodeSendLimitReached)
	// Sends to specific users have their own budget, and transactional
	// sends to a segment or filters count there too.
	for _, body := range []string{
		`{"title":"one user","externalId":"u1"}`,
		`{"title":"users","externalIds":["u1","u2"],"segmentId":"` + seg + `"}`,
		`{"title":"receipt","transactional":true,"segmentId":"` + seg + `"}`,
		`{"title":"receipt","transactional":true,"filters":{"rules":[{"field":"country","value":"FR"}]}}`,
	} {
		if r := h.post(h.site.APIKey, body); r.status != 202 {
			t.Fatalf("%s: %d %s", body, r.status, r.body)
		}
	}
	// Another website is not touched.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	if r := h.post(other.APIKey, `{"title":"theirs"}`); r.status != 202 {
		t.Fatalf("other website: %d %s", r.status, r.body)
	}
	// The next clock hour frees the budget.
	h.clock.Add(40 * time.Minute)
	if r := h.post(h.site.APIKey, `{"title":"13:00"}`); r.status != 202 {
		t.Fatalf("next hour: %d %s", r.status, r.body)
	}
}

func TestSpecificUserBudget(t *testing.T) {
	h := newHarness(t)
	keys := make([]string, 17) // 17 keys x 60 a minute: the budget runs out first
	for i := range keys {
		keys[i] = h.key([]string{"send"}, nil)
	}
	for i := range specificUserSendsPerHour {
		if r := h.post(keys[i/sendsPerMinute], `{"title":"hi","externalId":"u"}`); r.status != 202 {
			t.Fatalf("send %d: %d %s", i+1, r.status, r.body)
		}
	}
	r := h.post(keys[16], `{"title":"hi","externalId":"u"}`)
	expectError(t, r, 429, CodeSendLimitReached,
		`,"message":"the website's hourly budget of 1000 specific_users sends is used up","limit":1000,"kind":"specific_users","retryAfter":3600`)
	// Broadcasts are still allowed.
	if r := h.post(keys[16], `{"title":"all"}`); r.status != 202 {
		t.Fatalf("broadcast: %d %s", r.status, r.body)
	}
}

// TestLimitsAcrossNodes: two API nodes on one store share every counter,
// also when their requests race.
func TestLimitsAcrossNodes(t *testing.T) {
	h := newHarness(t)
	second, err := newAPI(t, testConfig{}, h.st, h.an, h.disp, nil, prometheus.NewRegistry(), WithClock(h.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	nodes := []func(method, uri, body string, headers ...string) response{
		h.do,
		func(method, uri, body string, headers ...string) response {
			return serveOnce(second.Handler(), method, uri, body, headers...)
		},
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{}
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				r := nodes[w%2]("POST", "/api/v1/notifications", `{"title":"race"}`, auth(h.site.APIKey)...)
				mu.Lock()
				statuses[r.status]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if statuses[202] != broadcastsPerHour || statuses[429] != 40-broadcastsPerHour || len(statuses) != 2 {
		t.Fatalf("40 racing broadcasts on two nodes: %v; want 30 accepted, 10 refused", statuses)
	}
	if n := h.notificationCount(); n != broadcastsPerHour {
		t.Fatalf("%d notifications stored, want %d", n, broadcastsPerHour)
	}
}

// createSegment makes a segment and returns its id.
func (h *harness) createSegment(t *testing.T, name, filters string) string {
	t.Helper()
	r := h.do("POST", "/api/v1/segments", `{"name":"`+name+`","filters":`+filters+`}`, auth(h.site.APIKey)...)
	if r.status != 201 {
		t.Fatalf("segment: %d %s", r.status, r.body)
	}
	return decode[segmentJSON](t, r).ID
}
