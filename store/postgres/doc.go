// Package postgres runs RelayBell's store (store/sqlstore) on PostgreSQL,
// through a pgx connection pool shared by every node of the cluster. It
// holds only what is PostgreSQL's: the pool and its transactions, run again
// after a deadlock or a serialization failure (Store.inTx); the dialect
// (db.go), whose DDL renders store/sqlstore's migrations; and the fast
// paths a benchmark justifies (fast_*.go, listed in store/sqlstore's doc
// with their benchmarks). testdata/previous holds the migrations as the
// last release before one list shipped them, for the upgrade tests.
//
// Times are timestamptz, kept to the microsecond (the store rounds every
// time it writes) and returned in UTC; JSON is jsonb or json, which may
// reformat a document but not change it. A statement's generic plan is
// kept where it costs no more than planning each run (plan_cache_mode
// auto unless the DSN says otherwise), and each connection forgets its
// statements at doubling intervals so that a kept plan never outlives the
// tables it was made for by long (plans.go). JIT compilation is off: the
// store's queries are short, and compiling cost more than it saved.
//
// Only the composition root and tests import this package.
package postgres
