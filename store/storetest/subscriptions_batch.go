package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/sqlstore"
)

// UpsertSubscriptions stores what the same registrations one after the
// other (UpsertSubscription, in the batch's order: website, URL) store,
// and answers the same: a mixed batch in one website against the same
// registrations one by one in another, the rows of both compared
// (subscribers, endpoints, visits learned, smart hours, pending triggers),
// their ids named by the registration that first answered them.
//
// The batch holds known browsers of their person registering again (the
// fast way), with and without the website's time zone, one whose person
// has a pending trigger, one whose smart hour moves, one who comes at her
// usual hour, one unsubscribed (which cannot happen by registrations
// alone, but registering again subscribes), and beside them what
// must go the one-by-one way and what makes a known browser go it too: a
// URL given twice, a person's two browsers, a new browser of a person
// before (by URL) that person's known one, a browser taken by another
// person before (by URL) its person's other browser, a replacement whose
// replaced URL is registered after it, a logout, a login on an
// anonymous browser.
//
// And new browsers, which go the fast way too: anonymous, of a new
// person, of a person whose anonymous browser logs in after it (by URL),
// two of one new person (the second joins the first's subscriber the
// one-by-one way), one of a person who logged in on another browser before
// it, one of a known person whose browsers are not in the batch, without
// a visit, with a visit in the website's time zone (the one-by-one way),
// with a welcome, with a welcome the ledger holds already, and one whose
// URL a replacement before it (by URL) names; the website has an active
// automation of new subscribers, so each queues a trigger, and another
// website in the batch has none. Their welcome timers and
// subscriber.created events (in the batch's order) are compared too.
func testUpsertSubscriptionsAsOneByOne(t *testing.T, s store.Store) {
	raw, ok := s.(interface{ DB() sqlstore.DB })
	if !ok {
		t.Skip("the store's rows cannot be read")
	}
	ctx := context.Background()
	batched, single := newWebsite(t, s), newWebsite(t, s) // Europe/Paris
	// Other websites, without automations or webhooks, in the batch too.
	batchedOther, singleOther := newWebsite(t, s), newWebsite(t, s)
	run := uuid.NewString()[:8]
	url := func(label string) string { return "https://push.example/" + run + "/" + label }
	reg := func(websiteID, label, externalID string, when time.Time) store.SubscriptionInput {
		return store.SubscriptionInput{WebsiteID: websiteID, Endpoint: url(label), P256dh: "BP256-" + label,
			Auth: "auth-" + label, ExternalID: externalID, Language: "fr", Timezone: "America/New_York",
			Country: "FR", UserAgent: "Chrome/124", Device: "desktop", URL: "https://example.com/" + label,
			Visit: store.VisitWeight, SiteTimezone: "Europe/Paris", At: when}
	}
	// setup registers the known browsers one by one; the person "pam"
	// after an automation of new browsers, whose trigger stays pending.
	setup := func(websiteID string) []store.SubscriptionResult {
		var out []store.SubscriptionResult
		add := func(in store.SubscriptionInput) { out = append(out, subscribe(t, s, in)) }
		first := at(time.Hour) // 10:26 in Paris, 05:26 in New York
		add(reg(websiteID, "a1", "alice", first))
		add(reg(websiteID, "a2", "alice", first))
		bob := reg(websiteID, "b1", "bob", first)
		bob.Timezone = "" // his hours are the website's
		add(bob)
		add(reg(websiteID, "c1", "carol", first))
		add(reg(websiteID, "c2", "carol", first))
		add(reg(websiteID, "e1", "erin", first))
		add(reg(websiteID, "f1", "frank", first))
		add(reg(websiteID, "n1", "", first))
		add(reg(websiteID, "n2", "", first))
		add(reg(websiteID, "q1", "", first))
		add(reg(websiteID, "s1", "", first))
		add(reg(websiteID, "t1", "tom", first))
		var err error
		// Registering again subscribes tom again.
		_, err = raw.DB().Write().Exec(ctx, `UPDATE subscribers SET unsubscribed_at = last_seen_at WHERE id = $1`,
			out[len(out)-1].SubscriberID)
		noErr(t, "unsubscribing tom", err)
		add(reg(websiteID, "u1", "", first))
		add(reg(websiteID, "i1", "ivy", first))
		// w2 was welcomed, then unsubscribed: the ledger holds its URL.
		welcome := 10 * time.Minute
		w2 := reg(websiteID, "w2", "", first)
		w2.Welcome = &welcome
		add(w2)
		_, err = s.FireWelcome(ctx, store.Timer{RunID: out[len(out)-1].EndpointID, Kind: store.TimerWelcome,
			WebsiteID: websiteID}, store.Welcome{At: first}) // turned off meanwhile: recorded, not sent
		noErr(t, "FireWelcome", err)
		if ok, err := s.WelcomeSent(ctx, websiteID, url("w2")); err != nil || !ok {
			t.Fatalf("WelcomeSent(w2) = %v, %v after FireWelcome", ok, err)
		}
		_, err = s.DeleteSubscription(ctx, websiteID, url("w2"))
		noErr(t, "DeleteSubscription", err)
		// Unsubscribed now: at a time the two sides share.
		_, err = raw.DB().Write().Exec(ctx, `UPDATE subscribers SET unsubscribed_at = last_seen_at WHERE id = $1`,
			out[len(out)-1].SubscriberID)
		noErr(t, "unsubscribing w2", err)
		noErr(t, "CreateWebhook", s.CreateWebhook(ctx, store.Webhook{ID: uuid.NewString(), WebsiteID: websiteID,
			URL: "https://hooks.example.com/" + run, Secret: "whsec_x", Enabled: true, CreatedAt: first}))
		noErr(t, "CreateAutomation", s.CreateAutomation(ctx, store.Automation{ID: uuid.NewString(), WebsiteID: websiteID,
			Name: "Welcome", Status: store.AutomationActive, TriggerType: store.TriggerSubscribed, Definition: []byte(`{}`),
			CreatedAt: first, UpdatedAt: first}))
		add(reg(websiteID, "p1", "pam", first))
		return out
	}
	batch := func(websiteID, otherID string) []store.SubscriptionInput {
		later := at(24*time.Hour + 6*time.Hour) // 16:26 in Paris, 11:26 in New York
		var out []store.SubscriptionInput
		add := func(in store.SubscriptionInput, change func(*store.SubscriptionInput)) {
			if change != nil {
				change(&in)
			}
			out = append(out, in)
		}
		add(reg(websiteID, "a1", "alice", later), func(in *store.SubscriptionInput) {
			in.Country, in.Language, in.Timezone, in.URL, in.Device = "CA", "", "Asia/Tokyo", "", ""
			in.Visit = 5 // a heavier hour: the smart hour moves
		})
		add(reg(websiteID, "a2", "alice", later.Add(time.Second)), func(in *store.SubscriptionInput) {
			in.Country, in.Timezone = "", "" // Tokyo, as the first browser left it
		})
		add(reg(websiteID, "b1", "bob", later), func(in *store.SubscriptionInput) {
			in.Timezone, in.SiteTimezone = "", "" // learned in the website's zone, read by the store
		})
		add(reg(websiteID, "c1", "dave", later), nil) // carol's browser, dave logs in
		add(reg(websiteID, "c2", "carol", later), func(in *store.SubscriptionInput) { in.Country = "IT" })
		add(reg(websiteID, "e0", "erin", later), func(in *store.SubscriptionInput) { in.Country = "US" }) // a new browser of erin
		add(reg(websiteID, "e1", "erin", later), func(in *store.SubscriptionInput) { in.Country = "CA" })
		add(reg(websiteID, "f1", "", later), func(in *store.SubscriptionInput) { in.Logout = true })
		add(reg(websiteID, "g1", "gina", later), nil) // a new person
		add(reg(websiteID, "n1", "", later), func(in *store.SubscriptionInput) { in.SiteTimezone = "" })
		add(reg(websiteID, "n1", "", later.Add(time.Hour)), func(in *store.SubscriptionInput) {
			in.Device, in.Country = "android", "BE" // the same URL again
		})
		add(reg(websiteID, "n2", "", later), func(in *store.SubscriptionInput) { in.Visit = 0 })
		// pam comes at the hour she came the day before: the visit adds to
		// her hour, which stays her smart hour.
		add(reg(websiteID, "p1", "pam", at(25*time.Hour)), nil)
		add(reg(websiteID, "q0", "", later), func(in *store.SubscriptionInput) {
			in.Replaces, in.ReplacesAuth = url("q1"), "auth-q1" // q1 renewed as q0
		})
		add(reg(websiteID, "q1", "", later), nil) // then q1 is a new browser
		add(reg(websiteID, "r1", "", later), nil)
		add(reg(websiteID, "r2", "", later), nil)
		add(reg(websiteID, "s1", "sam", later), nil) // an anonymous browser logs in
		add(reg(websiteID, "t1", "tom", later), func(in *store.SubscriptionInput) {
			in.Visit, in.Device = 0, "tablet" // his browser's device changes
		})
		add(reg(websiteID, "u1", "", later), func(in *store.SubscriptionInput) {
			in.Timezone, in.Visit = "", 3 // the stored zone's hour, heavier: the smart hour moves
		})
		// New browsers.
		add(reg(websiteID, "d1", "dave", later), nil) // dave logged in on c1 before
		add(reg(websiteID, "g2", "sam", later), nil)  // sam's anonymous s1 logs in after
		add(reg(websiteID, "h1", "hank", later), func(in *store.SubscriptionInput) { in.Country = "DE" })
		add(reg(websiteID, "h2", "hank", later.Add(time.Minute)), func(in *store.SubscriptionInput) {
			in.Device, in.Timezone = "android", "Asia/Tokyo"
		})
		add(reg(websiteID, "i2", "ivy", later), nil)
		add(reg(websiteID, "k1", "", later), func(in *store.SubscriptionInput) { in.SiteTimezone = "" })
		add(reg(websiteID, "k2", "kim", later), func(in *store.SubscriptionInput) { in.Visit, in.Language = 0, "" })
		add(reg(websiteID, "k3", "", later.Add(2*time.Hour)), func(in *store.SubscriptionInput) {
			in.Timezone, in.Country, in.Device, in.UserAgent, in.URL = "", "", "", "", ""
			in.Visit = 4
		})
		add(reg(websiteID, "k4", "", later), func(in *store.SubscriptionInput) {
			in.Timezone, in.SiteTimezone = "", "" // learned in the website's zone, read by the store
		})
		// j0 renews j1, unknown then: j1 is new after it (by URL).
		add(reg(websiteID, "j0", "", later), func(in *store.SubscriptionInput) {
			in.Replaces, in.ReplacesAuth = url("j1"), "auth-j1"
		})
		add(reg(websiteID, "j1", "", later), nil)
		add(reg(otherID, "o1", "", later), nil)
		add(reg(otherID, "o2", "olga", later), nil)
		welcome := 30 * time.Minute
		add(reg(websiteID, "w1", "", later), func(in *store.SubscriptionInput) { in.Welcome = &welcome })
		add(reg(websiteID, "w2", "", later), func(in *store.SubscriptionInput) { in.Welcome = &welcome })
		add(reg(websiteID, "w3", "wendy", later), func(in *store.SubscriptionInput) { in.Welcome = &welcome })
		// Given out of order: they go in the order of their URLs.
		slices.Reverse(out)
		out[3], out[9] = out[9], out[3]
		return out
	}

	type side struct {
		results []store.SubscriptionResult
		names   map[string]string // an id: the name of the answer that gave it first
	}
	finish := func(setup, results []store.SubscriptionResult) side {
		sd := side{results: results, names: map[string]string{}}
		name := func(id, kind string, i int) {
			if _, ok := sd.names[id]; !ok && id != "" {
				sd.names[id] = fmt.Sprintf("%s#%d", kind, i)
			}
		}
		for i, r := range append(slices.Clone(setup), results...) {
			name(r.SubscriberID, "subscriber", i)
			name(r.EndpointID, "endpoint", i)
		}
		return sd
	}

	// One by one, in the batch's order.
	oneSetup := setup(single.Website.ID)
	inputs := batch(single.Website.ID, singleOther.Website.ID)
	order := make([]int, len(inputs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(inputs[a].Endpoint, inputs[b].Endpoint) })
	oneResults := make([]store.SubscriptionResult, len(inputs))
	for _, i := range order {
		oneResults[i] = subscribe(t, s, inputs[i])
	}
	one := finish(oneSetup, oneResults)

	batchSetup := setup(batched.Website.ID)
	res, err := s.UpsertSubscriptions(ctx, batch(batched.Website.ID, batchedOther.Website.ID))
	noErr(t, "UpsertSubscriptions", err)
	many := finish(batchSetup, res)

	named := func(sd side, id string) string {
		if n, ok := sd.names[id]; ok {
			return n
		}
		return "unknown " + id
	}
	answers := func(sd side) []string {
		var out []string
		for i, r := range sd.results {
			slices.Sort(r.OptedIn)
			out = append(out, fmt.Sprintf("%s: subscriber %s, endpoint %s, created %v, pending %v, opted in %v",
				inputs[i].Endpoint[strings.LastIndexByte(inputs[i].Endpoint, '/')+1:],
				named(sd, r.SubscriberID), named(sd, r.EndpointID), r.Created, r.Pending, r.OptedIn))
		}
		return out
	}
	same(t, "answers of the batch against one by one", answers(many), answers(one))

	// rows reads a query's rows of a website, the columns ids names
	// (their indexes) written as the answers named them, sorted.
	rows := func(sd side, websiteID, query string, n int, ids []int) []string {
		t.Helper()
		r, err := raw.DB().Read().Query(ctx, query, websiteID)
		noErr(t, "reading rows", err)
		defer r.Close()
		var out []string
		for r.Next() {
			cols := make([]any, n)
			dest := make([]any, len(cols))
			for i := range cols {
				dest[i] = &cols[i]
			}
			noErr(t, "scanning a row", r.Scan(dest...))
			line := make([]string, len(cols))
			for i, c := range cols {
				if b, ok := c.([]byte); ok {
					c = string(b)
				}
				line[i] = fmt.Sprint(c)
				if slices.Contains(ids, i) {
					line[i] = named(sd, line[i])
				}
			}
			out = append(out, strings.Join(line, " | "))
		}
		noErr(t, "reading rows", r.Err())
		slices.Sort(out)
		return out
	}
	for _, q := range []struct {
		what, query string
		cols        int
		ids         []int
	}{
		{"subscribers", `SELECT id, coalesce(external_id, ''), country, language, timezone, url, created_at,
			last_seen_at, unsubscribed_at, consent_at, smart_hour, browsers FROM subscribers WHERE website_id = $1`, 12, []int{0}},
		{"endpoints", `SELECT id, subscriber_id, url, p256dh, auth, device, user_agent, created_at, last_seen_at
			FROM endpoints WHERE website_id = $1`, 9, []int{0, 1}},
		{"visits", `SELECT a.subscriber_id, a.hour, a.weight FROM subscriber_activity a
			JOIN subscribers s ON s.id = a.subscriber_id WHERE s.website_id = $1`, 3, []int{0}},
		{"triggers", `SELECT subscriber_id, trigger_type, coalesce(topic_id, ''), at FROM automation_triggers
			WHERE website_id = $1`, 4, []int{0}},
		{"timers", `SELECT run_id, item, kind, subscriber_id, due_at FROM timers WHERE website_id = $1`, 5, []int{0, 3}},
	} {
		for _, w := range [][2]website{{batched, single}, {batchedOther, singleOther}} {
			got, want := rows(many, w[0].Website.ID, q.query, q.cols, q.ids),
				rows(one, w[1].Website.ID, q.query, q.cols, q.ids)
			for i := range got {
				got[i] = strings.ReplaceAll(got[i], w[0].Website.ID, "website")
			}
			for i := range want {
				want[i] = strings.ReplaceAll(want[i], w[1].Website.ID, "website")
			}
			same(t, q.what+" of the batch against one by one", got, want)
		}
	}

	// The events, in the order they were added, their ids named.
	events := func(sd side, websiteID string) []string {
		t.Helper()
		r, err := raw.DB().Read().Query(ctx, `SELECT event, data, created_at FROM webhook_events
			WHERE website_id = $1 ORDER BY seq`, websiteID)
		noErr(t, "reading events", err)
		defer r.Close()
		var out []string
		for r.Next() {
			var event, data string
			var created any
			noErr(t, "scanning an event", r.Scan(&event, &data, &created))
			for id, name := range sd.names {
				data = strings.ReplaceAll(data, id, name)
			}
			out = append(out, fmt.Sprintf("%s %s %v", event, data, created))
		}
		noErr(t, "reading events", r.Err())
		return out
	}
	same(t, "events of the batch against one by one", events(many, batched.Website.ID), events(one, single.Website.ID))
	same(t, "events of the other website's batch", events(many, batchedOther.Website.ID), nil)
}
