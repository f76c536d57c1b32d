package sqlite

import (
	"strings"
	"testing"
)

// TestWebhookQueryPlans keeps the webhook log's queries on their indexes:
// the claims read only waiting deliveries and unsent e-mails, a page of the
// log one range of one webhook's, pruning only the old rows.
func TestWebhookQueryPlans(t *testing.T) {
	s := openTest(t)
	f := func(name, query, index string, args ...any) {
		t.Helper()
		plan := queryPlan(t, s.w.db, name, query, args...)
		all := strings.Join(plan, "\n")
		for _, step := range plan {
			// An ordered walk of the expected (partial) index is fine.
			walk := strings.HasPrefix(step, "SCAN ") && strings.Contains(step, "USING INDEX "+index)
			if (strings.HasPrefix(step, "SCAN ") && !walk) || strings.Contains(step, "USE TEMP B-TREE") {
				t.Fatalf("%s scans or sorts:\n%s", name, all)
			}
		}
		if !strings.Contains(all, index) {
			t.Fatalf("%s does not use %s:\n%s", name, index, all)
		}
	}
	f("claim deliveries", claimDeliveriesQuery, "webhook_deliveries_due", 2, 1, 10)
	f("delivery log", deliveriesQuery, "webhook_deliveries_webhook", "h", 100, 25)
	f("prune deliveries", pruneDeliveriesQuery, "webhook_deliveries_created", 1)
	f("prune events", pruneEventsQuery, "webhook_events_created", 1)
	f("claim emails", claimEmailsQuery, "emails_unsent", 2, 1, 10)
}
