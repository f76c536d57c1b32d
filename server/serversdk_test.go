package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/client"
)

// sdkWebhookReceiver is a loopback receiver that keeps each delivery's
// body and headers, for the SDKs' verifiers.
type sdkWebhookReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	got   []sdkDelivery
	added chan struct{}
}

type sdkDelivery struct {
	Header http.Header
	Body   []byte
}

func newSDKWebhookReceiver(t *testing.T) *sdkWebhookReceiver {
	rc := &sdkWebhookReceiver{added: make(chan struct{}, 16)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, sdkDelivery{r.Header.Clone(), body})
		rc.mu.Unlock()
		rc.added <- struct{}{}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// next waits for the next delivery; the test fails after a minute without
// one, which no correct server takes.
func (rc *sdkWebhookReceiver) next(t *testing.T) sdkDelivery {
	t.Helper()
	select {
	case <-rc.added:
	case <-time.After(time.Minute):
		t.Fatal("no webhook delivery")
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.got[len(rc.got)-1]
}

// scopedKey is a new key of w with only scopes.
func (ts *testServer) scopedKey(w website, scopes ...string) string {
	ts.t.Helper()
	var out struct {
		APIKey string `json:"apiKey"`
	}
	if code := ts.call("POST", "/admin/v1/websites/"+w.WebsiteID+"/keys", adminToken, map[string]any{"name": "scoped", "scopes": scopes}, &out); code != 201 {
		ts.t.Fatalf("create key: %d", code)
	}
	return out.APIKey
}

// The Go SDK against an embedded RelayBell: sending, listing by pages,
// detail, cancel, events with an Idempotency-Key, segments, topics,
// generated methods across areas (templates, goals, schedules, reports,
// integrations), identity hashes, typed errors, and both verifiers over a
// delivery RelayBell signed.
func TestGoSDKAgainstServer(t *testing.T) {
	rc := newSDKWebhookReceiver(t)
	u, _ := url.Parse(rc.srv.URL)
	ts := startServer(t, func(c *Config) { c.WebhookAllowHosts = u.Host })
	w := ts.createWebsite()
	b := ts.push.NewBrowser(w.VAPIDPublicKey)
	ts.subscribe(w, b, map[string]any{"externalId": "user-1"})
	ctx := context.Background()
	c := client.New(ts.base, w.APIKey)

	// Send, then page through the list one at a time.
	var ids []string
	for _, title := range []string{"One", "Two", "Three"} {
		acc, err := c.SendNotification(ctx, client.SendRequest{Title: title, ExternalID: client.String("user-1")})
		if err != nil || !acc.OK || acc.Status != "queued" {
			t.Fatalf("SendNotification %s: %+v %v", title, acc, err)
		}
		ids = append(ids, acc.NotificationID)
	}
	var titles []string
	for n, err := range c.Notifications(ctx, &client.ListNotificationsParams{Limit: 1}) {
		if err != nil {
			t.Fatalf("Notifications: %v", err)
		}
		titles = append(titles, *n.Title)
	}
	if want := []string{"Three", "Two", "One"}; len(titles) != 3 || titles[0] != want[0] || titles[1] != want[1] || titles[2] != want[2] {
		t.Fatalf("pages gave %q, want %q", titles, want)
	}
	d, err := c.GetNotification(ctx, ids[0])
	if err != nil || d.Notification["id"] != ids[0] || d.Notification["title"] != "One" {
		t.Fatalf("GetNotification: %+v %v", d, err)
	}

	// A scheduled send is canceled.
	acc, err := c.SendNotification(ctx, client.SendRequest{Title: "Later", ExternalID: client.String("user-1"), SendAt: time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)})
	if err != nil || acc.Status != "scheduled" {
		t.Fatalf("scheduled SendNotification: %+v %v", acc, err)
	}
	if out, err := c.CancelNotification(ctx, acc.NotificationID); err != nil || !*out.Canceled {
		t.Fatalf("CancelNotification: %+v %v", out, err)
	}
	if d, err := c.GetNotification(ctx, acc.NotificationID); err != nil || d.Notification["status"] != "canceled" {
		t.Fatalf("after cancel: %+v %v", d, err)
	}

	// Typed errors: an unknown id, an empty title.
	_, err = c.GetNotification(ctx, "00000000-0000-4000-8000-000000000000")
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 404 || e.Code != "not_found" || e.RequestID == "" {
		t.Fatalf("unknown id: %v", err)
	}
	// An empty user id is refused, never a send to everyone.
	if _, err := c.SendNotification(ctx, client.SendRequest{Title: "x", ExternalID: client.String("")}); !client.IsCode(err, "external_ids_empty") {
		t.Fatalf("an empty externalId: %v", err)
	}
	if _, err := c.SendNotification(ctx, client.SendRequest{Title: "x", ExternalIDs: []string{}}); !client.IsCode(err, "external_ids_empty") {
		t.Fatalf("an empty externalIds: %v", err)
	}
	if _, err := c.SendNotification(ctx, client.SendRequest{}); !client.IsCode(err, "title_required") {
		t.Fatalf("no title: %v", err)
	}
	eventsOnly := client.New(ts.base, ts.scopedKey(w, "events:write"))
	_, err = eventsOnly.SendNotification(ctx, client.SendRequest{Title: "x"})
	if !errors.As(err, &e) || e.Status != 403 || e.Code != "insufficient_scope" || e.Required != "send" || e.RequestID == "" {
		t.Fatalf("events-only key sends: %v", err)
	}

	// Events: the same Idempotency-Key stores one event.
	ev := client.EventRequest{Event: client.Ptr("purchase"), ExternalID: client.Ptr("user-1"), Properties: map[string]any{"value": 12.5, "currency": "EUR"}}
	first, err := c.Track(ctx, ev, "order-1001")
	if err != nil || !first.OK || first.EventID == "" {
		t.Fatalf("Track: %+v %v", first, err)
	}
	again, err := c.PostEvent(ctx, ev, &client.PostEventParams{IdempotencyKey: "order-1001"})
	if err != nil || again.EventID != first.EventID {
		t.Fatalf("PostEvent again: %+v %v, want event %s", again, err, first.EventID)
	}
	events, err := c.ListEvents(ctx)
	if err != nil || len(events.Events) != 1 || *events.Events[0].ID != first.EventID || *events.Events[0].Name != "purchase" {
		t.Fatalf("ListEvents: %+v %v", events, err)
	}

	// Segments and topics.
	seg, err := c.CreateSegment(ctx, client.SegmentBody{Name: client.Ptr("German speakers"), Filters: &client.Filters{Match: client.Ptr("all"),
		Rules: []client.FiltersRulesItem{{Field: "language", Op: client.Ptr("is"), Value: json.RawMessage(`"de"`)}}}})
	if err != nil || seg.ID == "" || seg.Filters.Rules[0].Field != "language" {
		t.Fatalf("CreateSegment: %+v %v", seg, err)
	}
	segs, err := c.ListSegments(ctx)
	if err != nil || len(segs.Segments) != 1 || segs.Segments[0].ID != seg.ID || segs.Segments[0].Name != "German speakers" {
		t.Fatalf("ListSegments: %+v %v", segs, err)
	}
	topic, err := c.SaveTopic(ctx, client.SaveTopicRequest{Name: "Release notes"})
	if err != nil || topic.Slug == nil || *topic.Slug == "" {
		t.Fatalf("SaveTopic: %+v %v", topic, err)
	}
	topics, err := c.ListTopics(ctx)
	if err != nil || len(topics.Topics) != 1 || *topics.Topics[0].Name != "Release notes" {
		t.Fatalf("ListTopics: %+v %v", topics, err)
	}
	if _, err := c.GetStats(ctx, nil); err != nil {
		t.Fatalf("GetStats: %v", err)
	}

	// Generated methods across areas: templates, goals, schedules,
	// reports, integrations.
	tpl, err := c.CreateTemplate(ctx, client.TemplateBody{Name: client.Ptr("Welcome"), Title: client.Ptr("Hello {name|there}"), Body: client.Ptr("Thanks for subscribing")})
	if err != nil || tpl.ID == "" || tpl.Name != "Welcome" || *tpl.Title != "Hello {name|there}" {
		t.Fatalf("CreateTemplate: %+v %v", tpl, err)
	}
	if got, err := c.GetTemplate(ctx, tpl.ID); err != nil || got.ID != tpl.ID || *got.Body != "Thanks for subscribing" {
		t.Fatalf("GetTemplate: %+v %v", got, err)
	}
	if ok, err := c.DeleteTemplate(ctx, tpl.ID); err != nil || !ok.OK {
		t.Fatalf("DeleteTemplate: %+v %v", ok, err)
	}
	if _, err := c.GetTemplate(ctx, tpl.ID); !client.IsCode(err, "not_found") {
		t.Fatalf("GetTemplate after delete: %v", err)
	}
	goal, err := c.CreateGoal(ctx, client.GoalBody{Name: client.Ptr("Purchases"), Event: client.Ptr("purchase"), WindowHours: client.Ptr[int64](24)})
	if err != nil || goal.ID == "" || goal.WindowHours != 24 || *goal.Event != "purchase" {
		t.Fatalf("CreateGoal: %+v %v", goal, err)
	}
	goals, err := c.ListGoals(ctx)
	if err != nil || len(goals.Goals) != 1 || goals.Goals[0].ID != goal.ID {
		t.Fatalf("ListGoals: %+v %v", goals, err)
	}
	sched, err := c.CreateSchedule(ctx, client.ScheduleBody{Name: client.Ptr("Weekly digest"), Rule: client.Ptr("FREQ=WEEKLY;BYDAY=MO;BYHOUR=9"), Timezone: client.Ptr("Europe/Berlin"),
		Audience: &client.ScheduleAudience{Everyone: client.Ptr(true)}, Content: &client.ScheduleContent{Title: client.Ptr("This week")}})
	if err != nil || sched.ID == "" || sched.Status != "active" || len(sched.NextRuns) == 0 {
		t.Fatalf("CreateSchedule: %+v %v", sched, err)
	}
	if got, err := c.GetSchedule(ctx, sched.ID); err != nil || got.Name != "Weekly digest" || *got.Content.Title != "This week" {
		t.Fatalf("GetSchedule: %+v %v", got, err)
	}
	reports, err := c.GetReports(ctx)
	if err != nil || reports.Frequency == "" || reports.Timezone == "" {
		t.Fatalf("GetReports: %+v %v", reports, err)
	}
	integrations, err := c.ListIntegrations(ctx)
	if err != nil || len(integrations.Integrations) == 0 || integrations.ExternalID == "" {
		t.Fatalf("ListIntegrations: %+v %v", integrations, err)
	}
	csv, err := c.ExportSubscribers(ctx)
	if err != nil || !strings.Contains(string(csv), "user-1") {
		t.Fatalf("ExportSubscribers: %q %v", csv, err)
	}
	readOnly := client.New(ts.base, ts.scopedKey(w, "subscribers:read"))
	if _, err := readOnly.ListTemplates(ctx); err != nil {
		t.Fatalf("read-only ListTemplates: %v", err)
	}
	_, err = readOnly.CreateTemplate(ctx, client.TemplateBody{Name: client.Ptr("x"), Title: client.Ptr("x")})
	if !errors.As(err, &e) || e.Status != 403 || e.Code != "insufficient_scope" || e.Required != "settings:write" || e.RequestID == "" {
		t.Fatalf("read-only CreateTemplate: %v", err)
	}
	if _, err := readOnly.UpdateReports(ctx, client.ReportSettingsUpdate{Frequency: "weekly"}); !errors.As(err, &e) || e.Status != 403 || e.Code != "insufficient_scope" || e.Required != "settings:write" || e.RequestID == "" {
		t.Fatalf("read-only UpdateReports: %v", err)
	}

	// Identity verification: a hash from IdentityHash links; another is refused.
	ident, err := c.UpdateIdentity(ctx, client.IdentityUpdate{AddSecret: client.Ptr(true), Mode: client.Ptr("enforce")})
	if err != nil || ident.NewSecret == nil || ident.NewSecret.Secret == "" || ident.Mode != "enforce" {
		t.Fatalf("UpdateIdentity: %+v %v", ident, err)
	}
	sub := ts.push.NewBrowser(w.VAPIDPublicKey).Subscription()
	reg := map[string]any{"endpoint": sub.Endpoint, "keys": map[string]string{"p256dh": sub.P256dh, "auth": sub.Auth}, "externalId": "user-2",
		"externalIdHash": client.IdentityHash(ident.NewSecret.Secret, "user-2")}
	if code := ts.call("POST", "/api/v1/projects/"+w.ProjectID+"/subscriptions", "", reg, nil); code != 201 {
		t.Fatalf("subscribe with IdentityHash: %d", code)
	}
	reg["externalIdHash"] = client.IdentityHash(ident.NewSecret.Secret, "user-3")
	if code := ts.call("POST", "/api/v1/projects/"+w.ProjectID+"/subscriptions", "", reg, nil); code != 403 {
		t.Fatalf("subscribe with another id's hash: %d, want 403", code)
	}

	// A webhook test delivery, signed by RelayBell, passes the verifier
	// and the opt-in verifier of the original header; tampered or with
	// another secret it does not.
	created, err := c.CreateWebhook(ctx, client.WebhookBody{URL: client.Ptr(rc.srv.URL + "/in"), Events: []string{"webhook.test"}})
	if err != nil || created.Webhook.Secret == "" {
		t.Fatalf("CreateWebhook: %+v %v", created, err)
	}
	hook := created.Webhook
	tested, err := c.TestWebhook(ctx, hook.ID)
	if err != nil || tested.Delivery.ID == "" || tested.Delivery.Event != "webhook.test" {
		t.Fatalf("TestWebhook: %+v %v", tested, err)
	}
	delivery := tested.Delivery
	got := rc.next(t)
	if got.Header.Get(client.HeaderDelivery) != delivery.ID {
		t.Fatalf("delivery id %q, want %q", got.Header.Get(client.HeaderDelivery), delivery.ID)
	}
	v := client.Verifier{Secrets: []string{hook.Secret}}
	if err := v.Verify(got.Header.Get(client.HeaderWebhookSignature), got.Body); err != nil {
		t.Fatalf("verify RelayBell's delivery: %v (header %q)", err, got.Header.Get(client.HeaderWebhookSignature))
	}
	if err := v.VerifyOriginal(got.Header.Get(client.HeaderSignature), got.Body); err != nil {
		t.Fatalf("verify RelayBell's original header: %v (header %q)", err, got.Header.Get(client.HeaderSignature))
	}
	if got.Header.Get(client.HeaderEvent) != "webhook.test" {
		t.Fatalf("delivery headers %v", got.Header)
	}
	tampered := append(append([]byte(nil), got.Body...), ' ')
	if err := v.Verify(got.Header.Get(client.HeaderWebhookSignature), tampered); !errors.Is(err, client.ErrMismatch) {
		t.Fatalf("tampered body: %v", err)
	}
	if err := v.VerifyOriginal(got.Header.Get(client.HeaderSignature), tampered); !errors.Is(err, client.ErrMismatch) {
		t.Fatalf("tampered body, original header: %v", err)
	}
	other := client.Verifier{Secrets: []string{"whsec_other"}}
	if err := other.Verify(got.Header.Get(client.HeaderWebhookSignature), got.Body); !errors.Is(err, client.ErrMismatch) {
		t.Fatalf("other secret: %v", err)
	}
	if err := other.VerifyOriginal(got.Header.Get(client.HeaderSignature), got.Body); !errors.Is(err, client.ErrMismatch) {
		t.Fatalf("other secret, original header: %v", err)
	}
	hooks, err := c.ListWebhooks(ctx)
	if err != nil || len(hooks.Webhooks) != 1 || hooks.Webhooks[0].ID != hook.ID {
		t.Fatalf("ListWebhooks: %+v %v", hooks, err)
	}
	var log []string
	for d, err := range c.WebhookDeliveries(ctx, hook.ID, nil) {
		if err != nil {
			t.Fatalf("WebhookDeliveries: %v", err)
		}
		log = append(log, d.ID+" "+d.Event)
	}
	if len(log) != 1 || log[0] != delivery.ID+" webhook.test" {
		t.Fatalf("delivery log %q", log)
	}
}
