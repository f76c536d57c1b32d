package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/relaybell/relaybell/store"
)

// e2e drives the API over a real fasthttp server (in-memory listener) with
// the embedded SQLite store and analytics store behind it.
type e2e struct {
	t      *testing.T
	client *fasthttp.Client
	disp   *memDispatcher
	st     store.Store
}

func newE2E(t *testing.T) *e2e {
	t.Helper()
	if testing.Short() {
		t.Skip("SQLite end-to-end test")
	}
	st, an := openStores(t)
	disp := &memDispatcher{}
	a, err := newAPI(t, testConfig{Config: Config{AdminToken: testAdminToken}}, st, an, disp, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	a.SetReady(true)
	return &e2e{t: t, client: serveInMemory(t, a), disp: disp, st: st}
}

// call sends a request and decodes a JSON answer into out (when not nil).
func (e *e2e) call(method, path, token, body string, out any) int {
	e.t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://relaybell" + path)
	req.Header.SetMethod(method)
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Firefox/127.0")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.SetBodyString(body)
		req.Header.SetContentType("application/json")
	}
	if err := e.client.DoTimeout(req, resp, 10*time.Second); err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	id := string(resp.Header.Peek("X-Request-Id"))
	if id == "" {
		e.t.Fatalf("%s %s: no X-Request-Id", method, path)
	}
	if resp.StatusCode() >= 400 && !bytes.Contains(resp.Body(), []byte(`"request_id":"`+id+`"`)) {
		e.t.Fatalf("%s %s: error body %s lacks request id %s", method, path, resp.Body(), id)
	}
	if out != nil && len(resp.Body()) > 0 {
		if err := json.Unmarshal(resp.Body(), out); err != nil {
			e.t.Fatalf("%s %s: %s: %v", method, path, resp.Body(), err)
		}
	}
	return resp.StatusCode()
}

func TestEndToEndSQLite(t *testing.T) {
	e := newE2E(t)
	var site WebsiteCreated
	if s := e.call("POST", "/admin/v1/websites", testAdminToken, `{"name":"Shop","url":"https://shop.example"}`, &site); s != 201 {
		t.Fatalf("create website: %d", s)
	}
	sdk := "/api/v1/projects/" + site.ProjectID

	var cfg map[string]any
	if s := e.call("GET", sdk+"/config", "", "", &cfg); s != 200 || cfg["vapidPublicKey"] != site.VAPIDPublicKey {
		t.Fatalf("config: %d %v", s, cfg)
	}

	// One person, two browsers; the first registered twice.
	var a1, a2, b map[string]string
	bodyA := subscribeBody(t, "https://fcm.googleapis.com/fcm/send/a", `,"externalId":"u1","language":"de-de"`)
	if s := e.call("POST", sdk+"/subscriptions", "", bodyA, &a1); s != 201 {
		t.Fatalf("subscribe: %d", s)
	}
	if s := e.call("POST", sdk+"/subscriptions", "", bodyA, &a2); s != 200 || a1["subscriberId"] != a2["subscriberId"] || a1["endpointId"] != a2["endpointId"] {
		t.Fatalf("subscribe again: %d %v %v", s, a1, a2)
	}
	if s := e.call("POST", sdk+"/subscriptions", "", subscribeBody(t, "https://updates.push.services.mozilla.com/wpush/v2/b", `,"externalId":"u1"`), &b); s != 201 ||
		b["subscriberId"] != a1["subscriberId"] || b["endpointId"] == a1["endpointId"] {
		t.Fatalf("second browser: %d %v %v", s, a1, b)
	}
	if s := e.call("POST", sdk+"/subscriptions", "", subscribeBody(t, "https://10.0.0.1/push", ""), nil); s != 400 {
		t.Errorf("private endpoint: %d", s)
	}
	ep, err := e.st.Endpoint(context.Background(), site.WebsiteID, a1["endpointId"])
	if err != nil || ep.Device != "desktop" {
		t.Errorf("endpoint %+v (%v)", ep, err)
	}

	// Sends, paging stable while new ones arrive.
	var sent []string
	for i := range 5 {
		var out map[string]any
		if s := e.call("POST", "/api/v1/notifications", site.APIKey, fmt.Sprintf(`{"title":"n%d"}`, i), &out); s != 202 || out["status"] != "queued" {
			t.Fatalf("send: %d %v", s, out)
		}
		sent = append(sent, out["notificationId"].(string))
	}
	if e.disp.count() != 5 {
		t.Errorf("dispatched %d", e.disp.count())
	}
	type page struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
		NextCursor *string `json:"nextCursor"`
	}
	var p1, p2, p3 page
	e.call("GET", "/api/v1/notifications?limit=2", site.APIKey, "", &p1)
	e.call("POST", "/api/v1/notifications", site.APIKey, `{"title":"late"}`, nil)
	e.call("GET", "/api/v1/notifications?limit=2&cursor="+*p1.NextCursor, site.APIKey, "", &p2)
	e.call("GET", "/api/v1/notifications?limit=2&cursor="+*p2.NextCursor, site.APIKey, "", &p3)
	var got []string
	for _, p := range []page{p1, p2, p3} {
		for _, it := range p.Items {
			got = append(got, it.ID)
		}
	}
	want := []string{sent[4], sent[3], sent[2], sent[1], sent[0]}
	if strings.Join(got, ",") != strings.Join(want, ",") || p3.NextCursor != nil {
		t.Errorf("pages %v, want %v (last cursor %v)", got, want, p3.NextCursor)
	}
	if s := e.call("GET", "/api/v1/notifications?cursor=bogus", site.APIKey, "", nil); s != 400 {
		t.Errorf("bogus cursor: %d", s)
	}

	// Pings count once and show in the detail.
	ping := fmt.Sprintf(`{"notificationId":%q,"endpointId":%q}`, sent[0], a1["endpointId"])
	for range 2 {
		if s := e.call("POST", sdk+"/pings/clicked", "", ping, nil); s != 204 {
			t.Errorf("click ping: %d", s)
		}
	}
	var detail struct {
		Notification map[string]any `json:"notification"`
		Devices      []map[string]any
	}
	if s := e.call("GET", "/api/v1/notifications/"+sent[0], site.APIKey, "", &detail); s != 200 ||
		detail.Notification["clicked"] != float64(1) || detail.Notification["title"] != "n0" {
		t.Errorf("detail: %d %v", s, detail.Notification)
	}

	// Keys and suspension.
	var created struct {
		APIKey string  `json:"apiKey"`
		Key    KeyView `json:"key"`
	}
	if s := e.call("POST", "/admin/v1/websites/"+site.WebsiteID+"/keys", testAdminToken, `{"name":"cms","scopes":["events:write"]}`, &created); s != 201 {
		t.Fatalf("create key: %d", s)
	}
	if s := e.call("POST", "/api/v1/notifications", created.APIKey, `{"title":"x"}`, nil); s != 403 {
		t.Errorf("send with events:write: %d", s)
	}
	if s := e.call("POST", "/admin/v1/accounts/"+site.AccountID+"/suspend", testAdminToken, "", nil); s != 200 {
		t.Fatalf("suspend: %d", s)
	}
	var errBody map[string]string
	if s := e.call("GET", "/api/v1/notifications", site.APIKey, "", &errBody); s != 403 || errBody["error"] != "account_suspended" {
		t.Errorf("suspended: %d %v", s, errBody)
	}

	// Unsubscribe.
	if s := e.call("DELETE", sdk+"/subscriptions", "", `{"endpoint":"https://fcm.googleapis.com/fcm/send/a"}`, nil); s != 200 {
		t.Errorf("unsubscribe: %d", s)
	}
	if _, err := e.st.Endpoint(context.Background(), site.WebsiteID, a1["endpointId"]); err == nil {
		t.Error("endpoint still there after unsubscribe")
	}
	if s := e.call("GET", "/readyz", "", "", nil); s != 200 {
		t.Errorf("readyz %d", s)
	}
}
