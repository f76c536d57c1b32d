package reports

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/automations/enginetest"
	"github.com/relaybell/relaybell/stats"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/webpush"
)

// The delivery health counts the period's sends' failed and pruned pushes
// by the push service of their endpoints, as the pusher names it: FCM,
// Mozilla and Apple browsers, and one of another service; a result
// recorded before the service was kept counts as other; a send of the
// day before and a test send are not counted. On both stores.
func TestHealthByPushService(t *testing.T) {
	for _, s := range enginetest.Stores {
		t.Run(s.Name, func(t *testing.T) {
			st := s.Open(t)
			ctx := context.Background()
			w := enginetest.Website(t, st)
			day := utc(t, "2026-03-10 00:00")
			browser := map[string]store.SubscriptionResult{}
			urls := map[string]string{}
			for name, prefix := range map[string]string{
				"fcm1": "https://fcm.googleapis.com/fcm/send/", "fcm2": "https://fcm.googleapis.com/fcm/send/",
				"fcm3": "https://fcm.googleapis.com/fcm/send/", "fcm4": "https://fcm.googleapis.com/fcm/send/",
				"moz1": "https://updates.push.services.mozilla.com/wpush/v2/", "moz2": "https://updates.push.services.mozilla.com/wpush/v2/",
				"apple1": "https://web.push.apple.com/", "apple2": "https://web.push.apple.com/",
				"other1": "https://push.example.net/",
			} {
				urls[name] = prefix + uuid.NewString()
				res, err := st.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: w.ID, Endpoint: urls[name],
					P256dh: "BP256-" + name, Auth: "auth-" + name, At: day.Add(-48 * time.Hour)})
				if err != nil {
					t.Fatal(err)
				}
				browser[name] = res
			}
			send := func(title string, createdAt time.Time, test bool, results map[string]string) {
				t.Helper()
				n := store.Notification{ID: uuid.NewString(), WebsiteID: w.ID, Status: store.StatusQueued, Title: title, Body: "b",
					Content: []byte(`{"title":"` + title + `"}`), Target: []byte(`{}`), SendBody: []byte(`{"title":"` + title + `"}`),
					CreatedAt: createdAt, Test: test}
				if err := st.CreateNotification(ctx, &n); err != nil {
					t.Fatal(err)
				}
				var rs []store.PushResult
				for name, outcome := range results {
					// The pusher's name of the endpoint's service; "old:"
					// is a result recorded without one.
					service := webpush.ServiceOf(urls[name])
					if o, ok := strings.CutPrefix(outcome, "old:"); ok {
						outcome, service = o, ""
					}
					rs = append(rs, store.PushResult{EndpointID: browser[name].EndpointID, Outcome: outcome, Service: service})
				}
				if err := st.RecordResults(ctx, n.ID, rs); err != nil {
					t.Fatal(err)
				}
			}
			const sent, failed, pruned = store.OutcomeSent, store.OutcomeFailed, store.OutcomePruned
			send("Day before", day.Add(-time.Hour), false, map[string]string{"fcm1": failed, "moz1": pruned})
			send("Morning", day.Add(9*time.Hour), false, map[string]string{"fcm1": sent, "fcm2": failed, "fcm3": pruned,
				"moz1": failed, "moz2": failed, "apple1": pruned, "apple2": sent, "other1": failed})
			send("Test", day.Add(10*time.Hour), true, map[string]string{"fcm1": failed, "apple2": failed})
			send("Evening", day.Add(20*time.Hour), false, map[string]string{"fcm1": failed, "moz1": pruned, "apple2": failed,
				"fcm4": "old:" + failed, "fcm2": sent})

			d := stats.DayOf(day)
			p := Period{From: d, To: d, PrevFrom: d.AddDays(-1), PrevTo: d.AddDays(-1)}
			rep, err := Build(ctx, st, w, p, day.Add(33*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			h := rep.Health
			want := []store.ServiceTrouble{
				{Service: "fcm", Failed: 2, Pruned: 1},
				{Service: "mozilla", Failed: 2, Pruned: 1},
				{Service: "apple", Failed: 1, Pruned: 1},
				{Service: "other", Failed: 2},
			}
			if h.Failed != 7 || h.Pruned != 3 || !reflect.DeepEqual(h.Services, want) {
				t.Fatalf("health: %d failed, %d pruned, by service %+v\nwant 7, 3, %+v", h.Failed, h.Pruned, h.Services, want)
			}
			text := rep.Text()
			wantText := "\nDelivery health\n  Failed pushes: 7\n  Pruned browsers: 3\n" +
				"  Push service     Failed   Pruned\n" +
				"  fcm                   2        1\n" +
				"  mozilla               2        1\n" +
				"  apple                 1        1\n" +
				"  other                 2        0\n" +
				"  Failing webhooks: 0\n"
			if !strings.Contains(text, wantText) {
				t.Fatalf("the text lacks\n%s\nin\n%s", wantText, text)
			}
			html, err := rep.HTML()
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range []string{"fcm\t2\t1", "mozilla\t2\t1", "apple\t1\t1", "other\t2\t0"} {
				c := strings.Split(row, "\t")
				cells := `<td style="padding-right:24px">` + c[0] + `</td><td style="text-align:right;padding-right:24px">` + c[1] +
					`</td><td style="text-align:right">` + c[2] + `</td>`
				if !strings.Contains(html, cells) {
					t.Errorf("the HTML lacks the row %s:\n%s", cells, html)
				}
			}

			// A period without failures shows no table.
			quiet := enginetest.Website(t, st)
			rep, err = Build(ctx, st, quiet, p, day.Add(33*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			html, err = rep.HTML()
			if err != nil {
				t.Fatal(err)
			}
			if rep.Health.Services != nil || strings.Contains(rep.Text(), "Push service") || strings.Contains(html, "Push service") {
				t.Fatalf("a quiet period's health %+v\n%s\n%s", rep.Health, rep.Text(), html)
			}
		})
	}
}
