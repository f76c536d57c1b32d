package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/sqlstore"
)

// queryPlan returns the steps of SQLite's plan for query.
func queryPlan(t *testing.T, db *sql.DB, name, query string, args ...any) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plan = append(plan, detail)
	}
	return plan
}

// TestQueryPlans keeps the hot queries on their indexes: no full scan of a
// table, only of the json_each argument lists.
func TestQueryPlans(t *testing.T) {
	s := openTest(t)
	f := func(name, query string, args ...any) {
		t.Helper()
		plan := queryPlan(t, s.r.db, name, query, args...)
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN ") && !strings.HasPrefix(step, "SCAN json_each") && !strings.HasPrefix(step, "SCAN (subquery") && step != "SCAN x" {
				t.Fatalf("%s scans a table:\n%s", name, strings.Join(plan, "\n"))
			}
		}
	}
	f("audience", sqlstore.AudienceSQL(dialect, false), "w", 1, "", 10, "")
	f("audience of a topic", sqlstore.AudienceSQL(dialect, false), "w", 1, "", 10, "t")
	f("audience by external id", sqlstore.AudienceSQL(dialect, true), "w", 1, "", 10, "", `["a"]`)
	f("audience of one endpoint", sqlstore.EndpointAudienceSQL, "w", 1, "", 10, "", "e")
	f("lean audience", sqlstore.LeanAudienceSQL, "w", 1, "", 10, "")
	f("lean audience of a topic", sqlstore.LeanAudienceSQL, "w", 1, "", 10, "t")
	f("push ledger", sqlstore.LedgerQuery(1), "n", 1, "a", "b", "c")
	f("push ledger of four shards", sqlstore.LedgerQuery(4), "n", 1, "a", "b", "c", 2, "a", "b", "c", 3, "a", "b", "c", -1, "", "", "")
	if plan := strings.Join(queryPlan(t, s.r.db, "push ledger", sqlstore.LedgerQuery(1), "n", 1, "a", "b", "c"), "\n"); plan != "SEARCH n USING COVERING INDEX sqlite_autoindex_notifications_1 (id=?)\n"+
		"SEARCH l USING PRIMARY KEY (notification_seq=? AND shard=? AND last_endpoint>? AND last_endpoint<?)" {
		t.Fatalf("the push ledger is not read as one bounded range of its key:\n%s", plan)
	}
	f("delivery trouble", sqlstore.DeliveryTroubleQuery(dialect), "w", `["a"]`)
	if plan := queryPlan(t, s.r.db, "delivery trouble", sqlstore.DeliveryTroubleQuery(dialect), "w", `["a"]`); !strings.Contains(strings.Join(plan, "\n"), "push_ledger_trouble") {
		t.Fatalf("delivery trouble does not read push_ledger_trouble:\n%s", strings.Join(plan, "\n"))
	}
	if plan := queryPlan(t, s.r.db, "last integration error", sqlstore.LastIntegrationErrorSQL, "w", "shopify"); strings.Join(plan, "\n") != "SEARCH integration_deliveries USING INDEX integration_deliveries_failed (website_id=? AND platform=?)" {
		t.Fatalf("the last integration error does not read integration_deliveries_failed alone:\n%s", strings.Join(plan, "\n"))
	}
	people := func(name string, q store.PeopleQuery) {
		t.Helper()
		q.WebsiteID = "w"
		query, args := sqlstore.PeopleSQL(dialect, q, 25)
		f(name, query, args...)
	}
	people("people", store.PeopleQuery{})
	people("people after", store.PeopleQuery{After: &store.PersonKey{CreatedAt: time.Now(), ID: "a"}})
	people("people with a label", store.PeopleQuery{Filter: store.PeopleFilter{Tags: []store.TagCondition{{Key: "plan"}}}})
	people("people searched", store.PeopleQuery{Filter: store.PeopleFilter{Q: "user"}})
	reach := func(name string, q store.ReachQuery) {
		t.Helper()
		q.WebsiteID = "w"
		query, args := sqlstore.ReachSQL(dialect, q)
		f(name, query, args...)
	}
	reach("reach of a shard", store.ReachQuery{Shard: 3, Tags: true})
	reach("reach of one endpoint", store.ReachQuery{Shard: store.AllShards, EndpointID: "e"})
	reach("reach by external id", store.ReachQuery{Shard: store.AllShards, ExternalIDs: []string{"a", "b"}})
	reach("reach of a label", store.ReachQuery{Shard: store.AllShards,
		Narrow: store.PeopleFilter{Tags: []store.TagCondition{{Key: "plan", Value: "pro", HasValue: true}}}})
}
