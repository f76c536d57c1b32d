package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"testing"
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
	f("audience", audienceQuery, "w", 1, "", 10, "")
	f("audience of a topic", audienceQuery, "w", 1, "", 10, "t")
	f("audience by external id", audienceExternalQuery, "w", 1, "", 10, `["a"]`, "")
	f("people", `SELECT `+personCols+` FROM subscribers s
		WHERE s.website_id = ? AND (s.created_at, s.id) < (?, ?)
		ORDER BY s.created_at DESC, s.id DESC LIMIT ?`, "w", 1, "", 10)
	f("undelivered", undeliveredQuery, "n", `["a"]`)
}
