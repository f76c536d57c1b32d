package api

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

// The subscribed and topic_opt_in triggers are stored with the
// registration or import that causes them (store.PendingTrigger): a
// request that fails after storing the browser loses none, and a retry
// starts each run once.

func (s *failStore) TriggerAutomation(ctx context.Context, tr store.AutomationTrigger) (bool, error) {
	if err := s.failing("TriggerAutomation"); err != nil {
		return false, err
	}
	return s.Store.TriggerAutomation(ctx, tr)
}

func (s *failStore) DoneTrigger(ctx context.Context, id string) error {
	if err := s.failing("DoneTrigger"); err != nil {
		return err
	}
	return s.Store.DoneTrigger(ctx, id)
}

// topicIDs maps the website's topic slugs to their ids.
func (h *harness) topicIDs(t *testing.T) map[string]string {
	t.Helper()
	list, err := h.st.ListTopics(context.Background(), h.site.WebsiteID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tp := range list {
		out[tp.Slug] = tp.ID
	}
	return out
}

// TestAutomationTriggerSurvivesFailure: a registration whose automations
// fail to start after the browser is stored answers 500; its retry (the
// same browser: 200, not a new one) starts them, once, counting from the
// first request. A failure after the runs started (the trigger not yet
// marked done) is retried without starting them again.
func TestAutomationTriggerSurvivesFailure(t *testing.T) {
	h := newHarness(t)
	h.createTopics(t, "news")
	welcome := h.createAutomation(t, `{"name":"Welcome","status":"active","trigger":{"type":"subscribed"},
		"messages":[{"delaySeconds":60,"title":"Welcome"}]}`)["id"].(string)
	news := h.createAutomation(t, `{"name":"News","status":"active","trigger":{"type":"topic_opt_in","topicId":"news"},
		"messages":[{"delaySeconds":60,"title":"News!"}]}`)["id"].(string)
	path := "/api/v1/projects/" + h.site.ProjectID + "/subscriptions"

	body := subscribeBody(t, "https://push.example/one", `,"topics":["news"]`)
	h.st.setFail("TriggerAutomation", errors.New("injected: the store went away"))
	if r := h.do("POST", path, body); r.status != 500 {
		t.Fatalf("failing subscribe: %d %s", r.status, r.body)
	}
	h.st.setFail("TriggerAutomation", nil)
	if s := h.automationStats(t, welcome); s != autoStats(0, 0, 0, 0, 0, 0, 0, 0) {
		t.Fatalf("welcome after the failure: %s", s)
	}
	h.clock.Add(30 * time.Second)
	if r := h.do("POST", path, body); r.status != 200 {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	for _, id := range []string{welcome, news} {
		if s := h.automationStats(t, id); s != autoStats(1, 1, 0, 0, 0, 0, 0, 0) {
			t.Fatalf("%s after the retry: %s", id, s)
		}
	}
	// Another page view does nothing more.
	if r := h.do("POST", path, body); r.status != 200 {
		t.Fatalf("page view: %d %s", r.status, r.body)
	}
	// The messages count from the first request: due 60 s after it.
	h.clock.Add(30 * time.Second)
	if n := h.runAutomations(t); n != 2 {
		t.Fatalf("fired %d at 60 s, want the welcome and the news", n)
	}
	if w, n := h.automationSends(t, welcome), h.automationSends(t, news); fmt.Sprint(w, n) != "[Welcome] [News!]" {
		t.Fatalf("sends %v %v", w, n)
	}

	// The runs start, then marking the trigger done fails: the retry
	// finds it and starts nothing more.
	second := subscribeBody(t, "https://push.example/two", "")
	h.st.setFail("DoneTrigger", errors.New("injected: the store went away"))
	if r := h.do("POST", path, second); r.status != 500 {
		t.Fatalf("failing subscribe: %d %s", r.status, r.body)
	}
	h.st.setFail("DoneTrigger", nil)
	if r := h.do("POST", path, second); r.status != 200 {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	if s := h.automationStats(t, welcome); s != autoStats(2, 1, 0, 0, 0, 0, 0, 0) {
		t.Fatalf("welcome after the second browser: %s", s)
	}
	h.clock.Add(time.Minute)
	if n := h.runAutomations(t); n != 1 {
		t.Fatalf("fired %d, want one welcome", n)
	}
	if w := h.automationSends(t, welcome); fmt.Sprint(w) != "[Welcome Welcome]" {
		t.Fatalf("welcome sends %v", w)
	}
	if left, err := h.st.PendingTriggers(context.Background(), h.site.WebsiteID, "", 0); err != nil || len(left) != 0 {
		t.Fatalf("pending triggers left: %v %v", left, err)
	}
}

// TestAutomationTopicOptInByImport: an import that opts a person into a
// topic starts the topic's topic_opt_in automations, once; an opt-in the
// person had already starts nothing.
func TestAutomationTopicOptInByImport(t *testing.T) {
	h := newHarness(t)
	h.createTopics(t, "news", "sale")
	ada := h.browser(t, `,"externalId":"ada"`)
	news := h.createAutomation(t, `{"name":"News","status":"active","trigger":{"type":"topic_opt_in","topicId":"news"},
		"messages":[{"title":"News!"}]}`)["id"].(string)
	imp := func(body string) {
		t.Helper()
		if r := h.do("POST", "/api/v1/subscribers/import", body, auth(h.site.APIKey)...); r.status != 200 {
			t.Fatalf("import %s: %d %s", body, r.status, r.body)
		}
	}
	imp(`{"subscribers":[{"externalId":"ada","topics":["sale"]}]}`) // not the automation's topic
	if s := h.automationStats(t, news); s != autoStats(0, 0, 0, 0, 0, 0, 0, 0) {
		t.Fatalf("after the sale opt-in: %s", s)
	}
	imp(`{"subscribers":[{"externalId":"ada","topics":["news","sale"]},{"externalId":"bob","topics":["NEWS"]}]}`)
	if s := h.automationStats(t, news); s != autoStats(2, 2, 0, 0, 0, 0, 0, 0) {
		t.Fatalf("after the news opt-ins: %s, want Ada and Bob", s)
	}
	imp(`{"subscribers":[{"externalId":"ada","topics":["news"]}]}`) // opted in already
	if s := h.automationStats(t, news); s != autoStats(2, 2, 0, 0, 0, 0, 0, 0) {
		t.Fatalf("after the same import again: %s", s)
	}
	h.runAutomations(t)
	var to []string
	for _, n := range h.notificationsOf(t, news) {
		to = append(to, string(n.Target))
	}
	bob, err := h.st.Person(context.Background(), h.site.WebsiteID, "bob")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`[{"subscriberId":"%s"} {"subscriberId":"%s"}]`, ada.SubscriberID, bob.ID)
	alt := fmt.Sprintf(`[{"subscriberId":"%s"} {"subscriberId":"%s"}]`, bob.ID, ada.SubscriberID)
	if got := fmt.Sprint(to); got != want && got != alt {
		t.Fatalf("sends to %s, want Ada's and Bob's", got)
	}
	// Every trigger the imports stored was done.
	if left, err := h.st.PendingTriggers(context.Background(), h.site.WebsiteID, "", 0); err != nil || len(left) != 0 {
		t.Fatalf("pending triggers left: %v %v", left, err)
	}
}
