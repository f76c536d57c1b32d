package sqlite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store/sqlstore"
)

// recordedStmt is a statement a stmtRecorder saw, with its arguments.
type recordedStmt struct {
	query string
	args  []any
}

// stmtRecorder is a sqlstore.DB that notes every statement run through it
// and runs it: a test reads the plans of the queries a method really runs.
type stmtRecorder struct {
	sqlstore.DB
	stmts *[]recordedStmt
}

func (r stmtRecorder) Read() sqlstore.Conn  { return recorderConn{r.DB.Read(), r.stmts} }
func (r stmtRecorder) Write() sqlstore.Conn { return recorderConn{r.DB.Write(), r.stmts} }

func (r stmtRecorder) Tx(ctx context.Context, opt sqlstore.TxOptions, fn func(tx sqlstore.Conn) error) error {
	return r.DB.Tx(ctx, opt, func(tx sqlstore.Conn) error { return fn(recorderConn{tx, r.stmts}) })
}

type recorderConn struct {
	c     sqlstore.Conn
	stmts *[]recordedStmt
}

func (c recorderConn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	*c.stmts = append(*c.stmts, recordedStmt{query, args})
	return c.c.Exec(ctx, query, args...)
}

func (c recorderConn) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	*c.stmts = append(*c.stmts, recordedStmt{query, args})
	return c.c.Query(ctx, query, args...)
}

func (c recorderConn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	*c.stmts = append(*c.stmts, recordedStmt{query, args})
	return c.c.QueryRow(ctx, query, args...)
}

// TestWebhookQueryPlans keeps the webhook log's queries on their indexes:
// the claims read only waiting deliveries and unsent e-mails, a page of the
// log one range of one webhook's, pruning only the old rows. It reads the
// plans of the statements the methods run.
func TestWebhookQueryPlans(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	var stmts []recordedStmt
	rs := sqlstore.New(stmtRecorder{s.DB(), &stmts}, dialect, nil)
	ran := func(call func() error) []recordedStmt {
		t.Helper()
		stmts = nil
		if err := call(); err != nil {
			t.Fatal(err)
		}
		return stmts
	}
	f := func(name string, st recordedStmt, index string) {
		t.Helper()
		plan := queryPlan(t, s.w.db, name, st.query, st.args...)
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
	at := time.UnixMilli(1)
	claim := ran(func() error {
		_, err := rs.ClaimWebhookDeliveries(ctx, at, time.Millisecond, 10)
		return err
	})
	f("claim deliveries", claim[0], "webhook_deliveries_due")
	page := ran(func() error {
		_, err := rs.WebhookDeliveries(ctx, "h", 100, 25)
		return err
	})
	f("delivery log", page[0], "webhook_deliveries_webhook")
	prune := ran(func() error {
		_, err := rs.PruneWebhookLog(ctx, at)
		return err
	})
	f("prune deliveries", prune[0], "webhook_deliveries_created")
	f("prune events", prune[1], "webhook_events_created")
	mail := ran(func() error {
		_, err := rs.ClaimEmails(ctx, at, time.Millisecond, 10)
		return err
	})
	f("claim emails", mail[0], "emails_unsent")
}
