package server

import (
	"encoding/csv"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/webpush/webpushtest"
)

// eventAnswer is the 202 of POST /events.
type eventAnswer struct {
	OK           bool    `json:"ok"`
	SubscriberID *string `json:"subscriberId"`
	IsConversion bool    `json:"isConversion"`
	Attribution  *struct {
		NotificationID string  `json:"notificationId"`
		Value          float64 `json:"value"`
	} `json:"attribution"`
	ProductAlerts          *int  `json:"productAlerts"`
	AlertAudience          *int  `json:"alertAudience"`
	AlertAudienceTruncated *bool `json:"alertAudienceTruncated"`
	Deduped                *bool `json:"deduped"`
}

func (ts *testServer) event(w website, body map[string]any) eventAnswer {
	ts.t.Helper()
	var out eventAnswer
	if code := ts.call("POST", "/api/v1/events", w.APIKey, body, &out); code != 202 || !out.OK {
		ts.t.Fatalf("POST /events %v: %d %+v", body, code, out)
	}
	return out
}

// A subscribed browser gets a send, reports it delivered, and the person
// buys: the purchase is credited to that send in its detail, the list and
// the export.
func TestConversionAttributedEndToEnd(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()
	if code := ts.call("PUT", "/api/v1/settings", w.APIKey, map[string]any{"revenueCurrency": "EUR"}, nil); code != 200 {
		t.Fatalf("settings: %d", code)
	}
	b := ts.push.NewBrowser(w.VAPIDPublicKey)
	s := ts.subscribe(w, b, map[string]any{"externalId": "ann"})
	id := ts.send(w, map[string]any{"title": "Spring sale", "externalId": "ann"})
	ts.waitSent(w, id)
	got := waitReceived(t, b, id)
	if code := ts.call("POST", "/api/v1/projects/"+w.ProjectID+"/pings/delivered", "",
		map[string]string{"notificationId": got.NotificationID, "endpointId": got.EndpointID}, nil); code != 204 {
		t.Fatalf("delivered ping: %d", code)
	}

	ans := ts.event(w, map[string]any{"event": "purchase", "externalId": "ann", "properties": map[string]any{"value": 49.9, "orderId": "o-1"}})
	if !ans.IsConversion || ans.SubscriberID == nil || *ans.SubscriberID != s.SubscriberID || ans.Attribution == nil ||
		ans.Attribution.NotificationID != id || ans.Attribution.Value != 49.9 {
		t.Fatalf("purchase answer %+v", ans)
	}

	var d struct {
		Notification struct {
			Conversions int64   `json:"conversions"`
			Revenue     float64 `json:"revenue"`
		} `json:"notification"`
		Funnel        map[string]int64 `json:"funnel"`
		Revenue       float64          `json:"revenue"`
		Currency      string           `json:"currency"`
		ConversionsBy map[string]int64 `json:"conversionsBy"`
	}
	waitFor(t, "the conversion in the detail", func() bool {
		ts.call("GET", "/api/v1/notifications/"+id, w.APIKey, nil, &d)
		return d.Notification.Conversions == 1
	})
	if d.Notification.Revenue != 49.9 || d.Funnel["converted"] != 1 || d.Revenue != 49.9 || d.Currency != "EUR" ||
		d.ConversionsBy["influenced"] != 1 || d.ConversionsBy["clickThrough"] != 0 {
		t.Fatalf("detail %+v", d)
	}
	var list struct {
		Items []struct {
			ID          string  `json:"id"`
			Conversions int64   `json:"conversions"`
			Revenue     float64 `json:"revenue"`
		} `json:"items"`
	}
	ts.call("GET", "/api/v1/notifications", w.APIKey, nil, &list)
	if len(list.Items) != 1 || list.Items[0].ID != id || list.Items[0].Conversions != 1 || list.Items[0].Revenue != 49.9 {
		t.Fatalf("list %+v", list.Items)
	}
	rows := exportRows(t, ts, w)
	if len(rows) != 2 || rows[1]["conversions"] != "1" || rows[1]["revenue"] != "49.9" {
		t.Fatalf("export %v", rows)
	}
}

// exportRows reads the notifications CSV export as one map per line, the
// header line included as rows[0].
func exportRows(t *testing.T, ts *testServer, w website) []map[string]string {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.base+"/api/v1/notifications/export.csv", nil)
	req.Header.Set("Authorization", "Bearer "+w.APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	lines, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
	if err != nil || len(lines) == 0 {
		t.Fatalf("export %d %q: %v", resp.StatusCode, data, err)
	}
	out := make([]map[string]string, len(lines))
	for i, l := range lines {
		out[i] = map[string]string{}
		for j, name := range lines[0] {
			out[i][name] = l[j]
		}
	}
	return out
}

// A price drop goes to the people interested in the product, cut at the
// bound (newest interests first), minus those the frequency cap holds,
// and a second one within 10 minutes sends nothing.
func TestProductAlertReachesInterestedBrowsers(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.ProductAlertMax = 3 })
	w := ts.createWebsite()
	people := map[string]*webpushtest.Browser{}
	for _, name := range []string{"ann", "bob", "cid", "eve", "dan"} {
		people[name] = ts.push.NewBrowser(w.VAPIDPublicKey)
		ts.subscribe(w, people[name], map[string]any{"externalId": name})
	}
	// eve already got a push today; the cap is one a day.
	first := ts.send(w, map[string]any{"title": "Welcome", "externalId": "eve"})
	ts.waitSent(w, first)
	waitReceived(t, people["eve"], first)
	if code := ts.call("PUT", "/api/v1/settings", w.APIKey, map[string]any{"frequencyCap": map[string]int{"max": 1, "hours": 24}}, nil); code != 200 {
		t.Fatalf("settings: %d", code)
	}
	// Interests, oldest first: ann is cut, dan has none.
	// A millisecond apart at least: interests are kept to the millisecond,
	// and two of the same one are in no order.
	for _, name := range []string{"ann", "bob", "cid", "eve"} {
		ts.event(w, map[string]any{"event": "product.viewed", "externalId": name, "properties": map[string]any{"productId": "sku-1"}})
		time.Sleep(2 * time.Millisecond)
	}

	ans := ts.event(w, map[string]any{"event": "price_drop", "properties": map[string]any{
		"productId": "sku-1", "title": "Red shoes", "price": 59, "oldPrice": 79, "url": "https://shop.example/p/1"}})
	if ans.ProductAlerts == nil || *ans.ProductAlerts != 1 || *ans.AlertAudience != 3 || !*ans.AlertAudienceTruncated || *ans.Deduped {
		t.Fatalf("price drop %+v", ans)
	}
	var list struct {
		Items []struct {
			ID         string `json:"id"`
			Automation bool   `json:"automation"`
		} `json:"items"`
	}
	ts.call("GET", "/api/v1/notifications", w.APIKey, nil, &list)
	if len(list.Items) != 2 || !list.Items[0].Automation {
		t.Fatalf("list %+v", list.Items)
	}
	alert := list.Items[0].ID
	d := ts.waitSent(w, alert)
	if d.Notification.Sent != 2 {
		t.Fatalf("alert %+v", d.Notification)
	}
	for _, name := range []string{"bob", "cid"} {
		p := waitReceived(t, people[name], alert)
		if p.Title != "Price drop: Red shoes" || p.Body != "Now 59, was 79." || !strings.HasPrefix(p.URL, "https://shop.example/p/1") {
			t.Fatalf("%s got %+v", name, p)
		}
	}
	for _, name := range []string{"ann", "eve", "dan"} {
		if got := received(t, people[name], alert); len(got) != 0 {
			t.Fatalf("%s got the alert", name)
		}
	}
	again := ts.event(w, map[string]any{"event": "price_drop", "properties": map[string]any{"productId": "sku-1", "price": 49}})
	if *again.ProductAlerts != 0 || !*again.Deduped {
		t.Fatalf("second price drop %+v", again)
	}
}
