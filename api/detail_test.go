package api

import (
	"context"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

// TestDetailExact checks the whole detail of a finished send, and that an
// automation send has no sendBody.
func TestDetailExact(t *testing.T) {
	h := newHarness(t)
	if r := h.do("PUT", "/api/v1/settings", `{"revenueCurrency":"usd"}`, auth(h.site.APIKey)...); r.status != 200 {
		t.Fatal(r.status, string(r.body))
	}
	ctx := context.Background()
	created := testStart.Add(-time.Hour)
	started, finished := testStart.Add(-50*time.Minute), testStart.Add(-49*time.Minute)
	n := store.Notification{
		ID: "5f0c1e9e-7a51-4c8e-9a59-0b1f2f9a2c11", WebsiteID: h.site.WebsiteID, Status: store.StatusSent,
		Title: "Sale", Body: "Half off",
		Content:       []byte(`{"title":"Sale","body":"Half off","url":"https://shop.example/s","ttl":3600,"tag":"sale","translations":{"fr":{"title":"Soldes","body":"Moitié prix"}}}`),
		Target:        []byte(`{"topicId":"t1"}`),
		TargetSummary: "All subscribers, in topic t1",
		SendBody:      []byte(`{"title":"Sale","body":"Half off","topicId":"T1"}`),
		CreatedAt:     created, StartedAt: &started, FinishedAt: &finished, PublishedAt: &created,
		Counters: store.Counters{Recipients: 7, Processed: 7, Sent: 3, Delivered: 2, Failed: 3, Pruned: 1, Clicked: 1, Conversions: 1, Revenue: 12.5},
	}
	if err := h.st.CreateNotification(ctx, &n); err != nil {
		t.Fatal(err)
	}
	r := h.do("GET", "/api/v1/notifications/"+n.ID, "", auth(h.site.APIKey)...)
	want := `{"notification":{"id":"5f0c1e9e-7a51-4c8e-9a59-0b1f2f9a2c11","title":"Sale","body":"Half off","url":"https://shop.example/s",` +
		`"icon":null,"image":null,"badge":null,"actions":null,"require_interaction":false,"tag":"sale","status":"sent",` +
		`"created_at":"2026-03-01T11:00:00.000Z","scheduled_at":null,"target":{"topicId":"t1"},"targetSummary":"All subscribers, in topic t1",` +
		`"automation":false,"automation_id":null,"welcome":false,"transactional":false,"ab":null,"ab_test":null,` +
		`"translations":{"fr":{"title":"Soldes","body":"Moitié prix"}},"ttl":3600,"per_timezone":false,"local_time":null,` +
		`"stats":{"queued_at":"2026-03-01T11:00:00.000Z","started_at":"2026-03-01T11:10:00.000Z","finished_at":"2026-03-01T11:11:00.000Z","duration_ms":60000},` +
		`"error":null,"recipients":7,"processed":7,"sent":3,"delivered":2,"failed":3,"pruned":1,"clicked":1,"ctr":33.3,"conversions":1,"revenue":12.5},` +
		`"funnel":{"recipients":7,"sent":3,"delivered":2,"clicked":1,"converted":1,"failed":3,"expired":1},` +
		`"devices":[],"variants":[],"languages":[],"errors":[],"revenue":12.5,"currency":"USD","conversionsBy":{"clickThrough":0,"influenced":1},` +
		`"sendBody":{"title":"Sale","body":"Half off","topicId":"T1"}}`
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("detail %d\n %s\nwant\n %s", r.status, r.body, want)
	}
	// The list item shows the same counters, ctr to one decimal.
	list := h.do("GET", "/api/v1/notifications", "", auth(h.site.APIKey)...).json(t)["items"].([]any)
	item := list[0].(map[string]any)
	if item["ctr"] != 33.3 || item["revenue"] != 12.5 || item["recipients"] != 7.0 || item["automation"] != false {
		t.Fatalf("list item %v", item)
	}

	auto := n
	auto.ID, auto.Automation = "6a1d2f0e-8b62-4d9f-8b6a-1c2e3f4a5b6c", true
	if err := h.st.CreateNotification(ctx, &auto); err != nil {
		t.Fatal(err)
	}
	if v := h.do("GET", "/api/v1/notifications/"+auto.ID, "", auth(h.site.APIKey)...).json(t); v["sendBody"] != nil || v["notification"].(map[string]any)["automation"] != true {
		t.Fatalf("automation send: sendBody %v", v["sendBody"])
	}
}
