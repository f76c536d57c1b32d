package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var frequencyCases = []testCase{
	{"CappedCountsSentOnly", testCappedSentOnly},
	{"CappedMaxBoundary", testCappedMaxBoundary},
	{"CappedNonTransactionalOnly", testCappedNonTransactional},
	{"CappedSameWebsiteOnly", testCappedSameWebsite},
	{"CappedStartedSince", testCappedSince},
	{"CappedExcludesTheSend", testCappedExcludesTheSend},
	{"CappedSendsLargerThanTheBatch", testCappedLargeSends},
}

// pastSend stores a finished send of the website started at started, with
// the given results.
func pastSend(t *testing.T, s store.Store, websiteID string, started time.Time, transactional bool, results ...store.PushResult) store.Notification {
	t.Helper()
	n := notification(websiteID)
	n.Status = store.StatusSent
	n.Transactional = transactional
	n.StartedAt = ptr(started)
	n.FinishedAt = ptr(started.Add(time.Minute))
	n = create(t, s, n)
	noErr(t, "RecordResults", recordResults(s, context.Background(), n.ID, results))
	return n
}

// sent returns a sent result for each endpoint.
func sent(ids ...string) []store.PushResult {
	out := make([]store.PushResult, len(ids))
	for i, id := range ids {
		out[i] = store.PushResult{EndpointID: id, Outcome: store.OutcomeSent}
	}
	return out
}

// wantCapped checks CappedEndpoints for a send that is not any stored one.
func wantCapped(t *testing.T, s store.Store, websiteID string, in []string, since time.Time, max int, want []string) {
	t.Helper()
	got, err := s.CappedEndpoints(context.Background(), websiteID, uuid.NewString(), keyed(in), since, max)
	noErr(t, "CappedEndpoints", err)
	same(t, "CappedEndpoints", got, want)
}

func testCappedSentOnly(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	e := endpoints(t, s, w.Website.ID, 5)
	pastSend(t, s, w.Website.ID, at(time.Hour), false,
		store.PushResult{EndpointID: e[0], Outcome: store.OutcomeSent},
		store.PushResult{EndpointID: e[1], Outcome: store.OutcomeFailed},
		store.PushResult{EndpointID: e[2], Outcome: store.OutcomePruned},
		store.PushResult{EndpointID: e[3], Outcome: store.OutcomeSent},
	)
	// In input order; e[2] was pruned since, and is still asked about.
	wantCapped(t, s, w.Website.ID, []string{e[4], e[3], e[2], e[1], e[0]}, t0, 1, []string{e[3], e[0]})
	wantCapped(t, s, w.Website.ID, []string{e[1], e[2], e[4]}, t0, 1, nil)
	wantCapped(t, s, w.Website.ID, nil, t0, 1, nil)
}

func testCappedMaxBoundary(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	e := endpoints(t, s, w.Website.ID, 4)
	// e[0] got 3 pushes, e[1] 2, e[2] 1, e[3] none.
	pastSend(t, s, w.Website.ID, at(time.Hour), false, sent(e[0], e[1], e[2])...)
	pastSend(t, s, w.Website.ID, at(2*time.Hour), false, sent(e[0], e[1])...)
	pastSend(t, s, w.Website.ID, at(3*time.Hour), false, sent(e[0])...)
	in := []string{e[3], e[2], e[1], e[0]}
	f := func(max int, want []string) {
		t.Helper()
		wantCapped(t, s, w.Website.ID, in, t0, max, want)
	}
	f(4, nil)
	f(3, []string{e[0]}) // exactly max pushes is capped
	f(2, []string{e[1], e[0]})
	f(1, []string{e[2], e[1], e[0]})
	f(0, in) // at least 0 pushes: every endpoint
}

func testCappedNonTransactional(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	e := endpoints(t, s, w.Website.ID, 3)
	pastSend(t, s, w.Website.ID, at(time.Hour), true, sent(e[0], e[1])...)
	pastSend(t, s, w.Website.ID, at(2*time.Hour), true, sent(e[0], e[1])...)
	pastSend(t, s, w.Website.ID, at(3*time.Hour), false, sent(e[1])...)
	wantCapped(t, s, w.Website.ID, e, t0, 1, []string{e[1]})
	wantCapped(t, s, w.Website.ID, e, t0, 2, nil)
}

func testCappedSameWebsite(t *testing.T, s store.Store) {
	w, other := newWebsite(t, s), newWebsite(t, s)
	e := endpoints(t, s, w.Website.ID, 2)
	// Results under the other website's send (endpoint ids are unique
	// across websites, so only a store that ignored the website would
	// count them).
	pastSend(t, s, other.Website.ID, at(time.Hour), false, sent(e[0], e[1])...)
	pastSend(t, s, w.Website.ID, at(time.Hour), false, sent(e[1])...)
	wantCapped(t, s, w.Website.ID, e, t0, 1, []string{e[1]})
	wantCapped(t, s, w.Website.ID, e, t0, 2, nil)
	wantCapped(t, s, other.Website.ID, e, t0, 1, e)
	wantCapped(t, s, uuid.NewString(), e, t0, 1, nil)
}

func testCappedSince(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	e := endpoints(t, s, w.Website.ID, 4)
	pastSend(t, s, w.Website.ID, at(time.Hour), false, sent(e[0])...)
	pastSend(t, s, w.Website.ID, at(3*time.Hour), false, sent(e[1])...)
	// A send started the way fan-out starts it.
	n := create(t, s, notification(w.Website.ID))
	_, err := s.StartSending(ctx, n.ID, at(5*time.Hour))
	noErr(t, "StartSending", err)
	noErr(t, "RecordResults", recordResults(s, ctx, n.ID, sent(e[2])))
	// Results of a send that never started (none in practice) don't count.
	never := create(t, s, notification(w.Website.ID))
	noErr(t, "RecordResults", recordResults(s, ctx, never.ID, sent(e[3])))

	f := func(since time.Time, want []string) {
		t.Helper()
		wantCapped(t, s, w.Website.ID, e, since, 1, want)
	}
	f(t0, []string{e[0], e[1], e[2]})
	f(at(time.Hour), []string{e[0], e[1], e[2]}) // started exactly at since counts
	f(at(time.Hour+time.Millisecond), []string{e[1], e[2]})
	f(at(3*time.Hour), []string{e[1], e[2]})
	f(at(5*time.Hour), []string{e[2]})
	f(at(5*time.Hour+time.Millisecond), nil)
}

func testCappedExcludesTheSend(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	e := endpoints(t, s, w.Website.ID, 2)
	current := pastSend(t, s, w.Website.ID, at(time.Hour), false, sent(e[0], e[1])...)
	pastSend(t, s, w.Website.ID, at(2*time.Hour), false, sent(e[1])...)
	got, err := s.CappedEndpoints(ctx, w.Website.ID, current.ID, keyed(e), t0, 1)
	noErr(t, "CappedEndpoints", err)
	same(t, "CappedEndpoints of the send itself", got, []string{e[1]})
	got, err = s.CappedEndpoints(ctx, w.Website.ID, current.ID, keyed(e), t0, 2)
	noErr(t, "CappedEndpoints", err)
	same(t, "CappedEndpoints of the send itself", got, nil)
	wantCapped(t, s, w.Website.ID, e, t0, 2, []string{e[1]})
}

// testCappedLargeSends asks about batches smaller than the past sends,
// which a store may read another way (by endpoint rather than by send).
func testCappedLargeSends(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	e := endpoints(t, s, w.Website.ID, 8)
	pastSend(t, s, w.Website.ID, at(time.Hour), false,
		store.PushResult{EndpointID: e[0], Outcome: store.OutcomeSent},
		store.PushResult{EndpointID: e[1], Outcome: store.OutcomeSent},
		store.PushResult{EndpointID: e[2], Outcome: store.OutcomeSent},
		store.PushResult{EndpointID: e[3], Outcome: store.OutcomeSent},
		store.PushResult{EndpointID: e[4], Outcome: store.OutcomeFailed},
		store.PushResult{EndpointID: e[5], Outcome: store.OutcomePruned},
	)
	pastSend(t, s, w.Website.ID, at(2*time.Hour), false, sent(e[0], e[4], e[6])...)
	pastSend(t, s, w.Website.ID, at(3*time.Hour), true, sent(e[0], e[1], e[2], e[3], e[4], e[5], e[6])...)
	pastSend(t, s, w.Website.ID, at(4*time.Hour), false, sent(e[0])...)
	f := func(in []string, max int, want []string) {
		t.Helper()
		wantCapped(t, s, w.Website.ID, in, t0, max, want)
	}
	f([]string{e[4], e[0]}, 1, []string{e[4], e[0]})
	f([]string{e[4], e[0]}, 2, []string{e[0]})
	f([]string{e[4], e[0]}, 3, []string{e[0]})
	f([]string{e[4], e[0]}, 4, nil)
	f([]string{e[5], e[1]}, 1, []string{e[1]})
	f([]string{e[5], e[1]}, 2, nil)
	f([]string{e[7]}, 1, nil)
	f([]string{e[6], e[3], e[2]}, 1, []string{e[6], e[3], e[2]})
}

// CappedFunc answers the frequency-cap question: the store's
// CappedEndpoints, or an alternative a store's benchmark measures against it.
type CappedFunc func(ctx context.Context, websiteID, notificationID string, endpoints []store.ShardEndpoint, since time.Time, max int) ([]string, error)

// The cap benchmark's history of BenchWebsite: CapBenchDays days of
// CapBenchBroadcasts broadcasts a day to the whole audience of
// CapBenchAudience browsers, and CapBenchSingles sends a day to one browser
// each (the specific-user sends, up to 1,000 an hour under the send limits),
// none transactional. The benchmark asks about a batch of 500 at the end.
const (
	CapBenchDays       = 30
	CapBenchBroadcasts = 4
	CapBenchSingles    = 1000
	CapBenchAudience   = 2000
)

// CapBenchNow is the time at the end of the cap benchmark's history.
var CapBenchNow = seedStart.Add(CapBenchDays * 24 * time.Hour)

// capBenchEndpoint is the id of browser i of the cap benchmark's audience.
func capBenchEndpoint(i int) string {
	return fmt.Sprintf("00000000-0000-4000-8000-%012x", i%CapBenchAudience)
}

// CapBenchOld is how many older sends (one a CapBenchSingles-th of a day
// before the history, with no results) a store's benchmark adds to measure a
// year of history: 335 more days of single sends.
const CapBenchOld = 335 * CapBenchSingles

// CapBenchOldStart is when the oldest of the older sends started.
var CapBenchOldStart = seedStart.Add(-CapBenchOld / CapBenchSingles * 24 * time.Hour)

// SeedCapHistory stores the cap benchmark's history through the store's
// own methods.
func SeedCapHistory(b *testing.B, s store.Store) {
	b.Helper()
	ctx := context.Background()
	send := func(started time.Time, ids []string) {
		n := store.Notification{ID: uuid.NewString(), WebsiteID: BenchWebsite, Status: store.StatusSent,
			CreatedAt: started, StartedAt: &started}
		if err := s.CreateNotification(ctx, &n); err != nil {
			b.Fatal(err)
		}
		for len(ids) > 0 {
			k := min(len(ids), 500)
			if err := recordResults(s, ctx, n.ID, sent(ids[:k]...)); err != nil {
				b.Fatal(err)
			}
			ids = ids[k:]
		}
	}
	all := make([]string, CapBenchAudience)
	for i := range all {
		all[i] = capBenchEndpoint(i)
	}
	day := 24 * time.Hour
	for i := range CapBenchDays * CapBenchBroadcasts {
		send(seedStart.Add(time.Duration(i)*day/CapBenchBroadcasts), all)
	}
	for i := range CapBenchDays * CapBenchSingles {
		send(seedStart.Add(time.Duration(i)*day/CapBenchSingles), []string{capBenchEndpoint(i * 7)})
	}
}

// BenchCapped asks capped about a batch of 500 of the audience over a store
// holding SeedCapHistory, with a cap of 3 in 24 hours and of 10 in a week
// (the longest window the API accepts).
func BenchCapped(b *testing.B, capped CappedFunc) {
	ctx := context.Background()
	ids := make([]string, 500)
	for i := range ids {
		ids[i] = capBenchEndpoint(i * 3)
	}
	batch := keyed(ids)
	for _, c := range []struct {
		name  string
		hours int
		max   int
	}{{"day", 24, 3}, {"week", 168, 10}} {
		b.Run(c.name, func(b *testing.B) {
			since := CapBenchNow.Add(-time.Duration(c.hours) * time.Hour)
			b.ReportAllocs()
			for b.Loop() {
				got, err := capped(ctx, BenchWebsite, uuid.NewString(), batch, since, c.max)
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != len(batch) {
					b.Fatalf("%d of %d capped, want all", len(got), len(batch))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/endpoint")
		})
	}
}

// UpgradeToLedger checks migration 39 on a store at the newest version:
// rewind takes its schema back to version 38 (push_ledger dropped,
// deliveries made again as version 38 had it, its at column of type
// timeType, version 39 forgotten), and reopen opens it again, which runs
// 39. The results a version 38 store kept in deliveries are then in the
// push ledger: Undelivered finds them done, the frequency cap counts the
// sent ones, a report counts the failed and pruned ones by push service,
// those of an endpoint that is gone included. The schema is taken back
// from versions 41 and 40 first.
func UpgradeToLedger(t *testing.T, s store.Store, timeType string, exec func(query string), reopen func() store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	e := endpoints(t, s, w.Website.ID, 4)
	n := sending(t, s, w.Website.ID)
	exec(`DELETE FROM schema_migrations WHERE version = 41`) // PostgreSQL's people mark, made again
	exec(`ALTER TABLE endpoints DROP COLUMN language`)
	exec(`DELETE FROM schema_migrations WHERE version = 40`)
	exec(`DROP TABLE push_ledger`)
	exec(`DELETE FROM schema_migrations WHERE version = 39`)
	exec(`CREATE TABLE deliveries (notification_seq bigint NOT NULL, endpoint_id text NOT NULL, outcome text NOT NULL,
		at ` + timeType + ` NOT NULL, push_service text, PRIMARY KEY (notification_seq, endpoint_id))`)
	row := func(endpointID, outcome, service string) {
		exec(fmt.Sprintf(`INSERT INTO deliveries (notification_seq, endpoint_id, outcome, at, push_service)
			SELECT seq, '%s', '%s', created_at, %s FROM notifications WHERE id = '%s'`, endpointID, outcome, service, n.ID))
	}
	// As version 38 kept them: e[0] and e[2] sent, e[1] failed, a browser
	// pruned (gone since); then e[2] is gone too.
	row(e[0], store.OutcomeSent, "NULL")
	row(e[1], store.OutcomeFailed, "'fcm'")
	row(e[2], store.OutcomeSent, "NULL")
	row(uuid.NewString(), store.OutcomePruned, "'mozilla'")
	// 1,500 failed pushes of browsers gone since, in two buckets: three
	// runs (two of bucket f, split at a thousand ids, and one of bucket
	// 0), which a report sums.
	for from := 0; from < 1500; from += 250 {
		var values []string
		for i := from; i < from+250; i++ {
			id := fmt.Sprintf("f%07d-gone", i)
			if i%3 == 0 {
				id = fmt.Sprintf("0%07d-gone", i)
			}
			values = append(values, fmt.Sprintf(`SELECT seq, '%s', 'failed', created_at, 'fcm' FROM notifications WHERE id = '%s'`, id, n.ID))
		}
		exec(`INSERT INTO deliveries (notification_seq, endpoint_id, outcome, at, push_service) ` + strings.Join(values, " UNION ALL "))
	}
	exec(fmt.Sprintf(`DELETE FROM endpoints WHERE id = '%s'`, e[2]))
	s = reopen()
	got, err := s.Undelivered(ctx, n.ID, keyed(e))
	noErr(t, "Undelivered", err)
	same(t, "undelivered after the upgrade", got, []string{e[2], e[3]})
	capped, err := s.CappedEndpoints(ctx, w.Website.ID, uuid.NewString(), keyed(e), t0, 1)
	noErr(t, "CappedEndpoints", err)
	same(t, "capped after the upgrade", capped, []string{e[0]})
	trouble, err := s.DeliveryTrouble(ctx, w.Website.ID, []string{n.ID})
	noErr(t, "DeliveryTrouble", err)
	same(t, "delivery trouble after the upgrade", trouble, []store.ServiceTrouble{{Service: "fcm", Failed: 1501}, {Service: "mozilla", Pruned: 1}})
}

// LedgerGoesWithWebsite checks that deleting a website deletes its sends'
// push ledger (count: a SQL count of rows).
func LedgerGoesWithWebsite(t *testing.T, s store.Store, count func(query string) int64) {
	ctx := context.Background()
	w, kept := newWebsite(t, s), newWebsite(t, s)
	for _, site := range []string{w.Website.ID, kept.Website.ID} {
		n := sending(t, s, site)
		noErr(t, "RecordResults", recordResults(s, ctx, n.ID, sent(endpoints(t, s, site, 2)...)))
	}
	runs := `SELECT count(*) FROM push_ledger c JOIN notifications n ON n.seq = c.notification_seq WHERE n.website_id = '%s'`
	all := count(`SELECT count(*) FROM push_ledger`)
	before := count(fmt.Sprintf(runs, w.Website.ID))
	if before == 0 || count(fmt.Sprintf(runs, kept.Website.ID)) == 0 {
		t.Fatal("no runs recorded")
	}
	noErr(t, "DeleteWebsite", s.DeleteWebsite(ctx, w.Website.ID))
	same(t, "runs left", count(`SELECT count(*) FROM push_ledger`), all-before)
}
