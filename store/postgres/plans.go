package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// planRefresh forgets a connection's prepared statements at doubling
// intervals after it connects, from first to at most most apart, so that
// no cached plan outlives the tables it was made for by long.
//
// pgx prepares every statement on each connection, and PostgreSQL plans a
// prepared statement afresh for its arguments five times, then keeps one
// generic plan when that plan costs no more than the fresh ones did
// (plan_cache_mode auto, the server's default). A generic plan is made for
// the tables as they are then, and kept until the table's statistics
// change (an ANALYZE, which autovacuum runs as a table grows, or DDL).
// Where autovacuum is off, a plan made while a table was small kept a
// sequential scan as it grew: the batch of registrations that looks its
// browsers up by URL read the whole endpoints table (two fifths more time
// to subscribe 100,000 browsers in the cluster bench, docs/scale-out.md).
// Planning each run instead (force_custom_plan) made planning about half
// of PostgreSQL's CPU for an event, a fifth for a push.
//
// Forgetting at doubling intervals bounds a stale plan's cost without
// giving that back: a plan made when a connection was t old is used
// until it is 2t old, so on a table growing at a steady rate it meets at
// most twice the rows it was made for; once most is reached, a plan is at
// most that old. Each forgetting costs a round trip and, for each
// statement the connection runs next, a parse and five fresh plans again.
type planRefresh struct {
	first, most time.Duration
	now         func() time.Time
}

// plans is the refresh Open installs: from a second after a connection
// is made to a minute apart.
var plans = planRefresh{first: time.Second, most: time.Minute, now: time.Now}

// planKey names a connection's *planAge in its pgconn's CustomData.
const planKey = "relaybell.planAge"

// planAge is when a connection forgets its statements next, and the
// interval after that.
type planAge struct {
	next  time.Time
	every time.Duration
}

// start is pgxpool's AfterConnect part: c forgets its statements first
// p.first from now.
func (p planRefresh) start(c *pgx.Conn) {
	c.PgConn().CustomData()[planKey] = &planAge{next: p.now().Add(p.first), every: p.first}
}

// prepare is pgxpool's PrepareConn: a connection whose time has come
// deallocates its prepared statements before it is used. One that fails
// to is closed, and the pool takes another.
func (p planRefresh) prepare(ctx context.Context, c *pgx.Conn) (bool, error) {
	age, ok := c.PgConn().CustomData()[planKey].(*planAge)
	if !ok {
		return true, nil
	}
	now := p.now()
	if now.Before(age.next) {
		return true, nil
	}
	if err := c.DeallocateAll(ctx); err != nil {
		return false, nil
	}
	age.every = min(2*age.every, p.most)
	age.next = now.Add(age.every)
	return true, nil
}
