package sqlite

import (
	"slices"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/store/sqlstore"
)

// TestCappedQueryPlan keeps the frequency-cap check on its keys: the recent
// sends from notifications_started, then one range of the push ledger's
// key a send, never a scan of either table.
func TestCappedQueryPlan(t *testing.T) {
	s := openTest(t)
	plan := queryPlan(t, s.r.db, "capped", sqlstore.CappedQuery, "w", 1, "n", 1, "a", "b", "c")
	for _, want := range []string{
		"SEARCH c USING PRIMARY KEY (notification_seq=? AND shard=? AND last_endpoint>? AND last_endpoint<?)",
		"SEARCH n USING INDEX notifications_started (website_id=? AND started_at>?)",
	} {
		if !slices.Contains(plan, want) {
			t.Fatalf("plan lacks %q:\n%s", want, strings.Join(plan, "\n"))
		}
	}
	for _, step := range plan {
		if strings.HasPrefix(step, "SCAN ") && !strings.HasPrefix(step, "SCAN json_each") {
			t.Fatalf("plan scans a table:\n%s", strings.Join(plan, "\n"))
		}
	}
}
