package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/storetest"
)

// TestUpsertSubscriptionsNewBrowserRace: a batch's new browser whose URL
// another transaction (another node's batch) inserts meanwhile waits for
// it on the unique index, fails on its commit, and runs again: the second
// run finds the endpoint, known now, and registers it again, keeping its
// ids, while the batch's other new browser is stored once.
func TestUpsertSubscriptionsNewBrowserRace(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	storetest.BenchSetup(t, s)
	reg := func(url string) store.SubscriptionInput {
		return store.SubscriptionInput{WebsiteID: storetest.BenchWebsite, Endpoint: "https://push.example/" + url,
			P256dh: "BP256-" + url, Auth: "auth-" + url, Device: "desktop", Visit: store.VisitWeight,
			SiteTimezone: "UTC", At: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	}

	// The other node's transaction: u1's browser, not committed yet.
	other, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	var otherPID int
	if err := other.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&otherPID); err != nil {
		t.Fatal(err)
	}
	const subscriberID, endpointID = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"
	if _, err := other.Exec(ctx, `INSERT INTO subscribers (id, website_id, shard, created_at, last_seen_at)
		VALUES ($1, $2, $3, now(), now())`, subscriberID, storetest.BenchWebsite, store.ShardOf(subscriberID)); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(ctx, `INSERT INTO endpoints (id, website_id, subscriber_id, url, p256dh, auth, shard,
		created_at, last_seen_at) VALUES ($1, $2, $3, $4, 'BP256-other', 'auth-other', $5, now(), now())`,
		endpointID, storetest.BenchWebsite, subscriberID, reg("u1").Endpoint, store.ShardOf(subscriberID)); err != nil {
		t.Fatal(err)
	}

	type answer struct {
		res []store.SubscriptionResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := s.UpsertSubscriptions(ctx, []store.SubscriptionInput{reg("u1"), reg("u2")})
		done <- answer{res, err}
	}()
	// Wait until the batch's insert of its endpoints waits for the other
	// transaction.
	for {
		var waiting bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE $1 = ANY (pg_blocking_pids(pid)) AND query LIKE 'INSERT INTO endpoints%')`, otherPID).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case a := <-done:
			t.Fatalf("the batch did not wait for the other transaction: %+v", a)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil {
		t.Fatalf("UpsertSubscriptions: %v", a.err)
	}
	if got := a.res[0]; got.SubscriberID != subscriberID || got.EndpointID != endpointID || got.Created {
		t.Errorf("u1: %+v, want the other transaction's subscriber %s and endpoint %s, not created", got, subscriberID, endpointID)
	}
	if got := a.res[1]; !got.Created || got.SubscriberID == subscriberID {
		t.Errorf("u2: %+v, want a new subscriber", got)
	}
	var endpoints, subscribers int
	var auth string
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM endpoints), (SELECT count(*) FROM subscribers),
		(SELECT auth FROM endpoints WHERE id = $1)`, endpointID).Scan(&endpoints, &subscribers, &auth); err != nil {
		t.Fatal(err)
	}
	if endpoints != 2 || subscribers != 2 || auth != "auth-u1" {
		t.Errorf("%d endpoints, %d subscribers, u1's auth %q; want 2, 2, auth-u1", endpoints, subscribers, auth)
	}
}
