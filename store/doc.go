// Package store is RelayBell's metadata: the records (accounts, websites,
// keys, subscribers and their browser endpoints, topics, segments,
// notifications, delivery records, webhooks and their deliveries) and the
// interfaces that hold them, one small interface per feature (Accounts,
// Limits, Subscriptions, Audiences, People, Notifications, Review, Waves,
// Delivery, Outbox, Webhooks, Identity, Behavior, Stats), whose sum is
// Store. A caller takes the interfaces it uses.
//
// There is one implementation, store/sqlstore, written once against a small
// dialect and run on two engines: store/sqlite (the embedded default) and
// store/postgres (the cluster). Each engine package holds only its
// connections, its dialect, its schema history and the few fast paths a
// benchmark justifies (store/sqlstore's doc lists them). store/storetest is
// the conformance suite both engines run: it is the judge of what a method
// means.
//
// # Adding a feature
//
//  1. The records and a small interface for the feature in this package,
//     each method's contract in its doc comment (what it returns for an
//     unknown id, what happens in one transaction, what a concurrent call
//     sees). Add the interface to Store.
//  2. One migration: store/sqlstore/migrations/NNNN_name.sql, the next
//     number, run by both engines, with the dialect's placeholders where
//     the engines' types differ ({{.Time}}: INTEGER unix milliseconds on
//     SQLite, timestamptz on PostgreSQL; {{.JSON}}, {{.Bool}}, …; see
//     sqlstore.DDL). Only SQL no placeholder gives (a trigger's language)
//     goes in a named block of NNNN_name.sqlite.sql and
//     NNNN_name.postgres.sql, listed in store/sqlstore's doc. Migrations
//     are append-only once shipped.
//  3. One file of queries, store/sqlstore/<feature>.go: methods on
//     *sqlstore.Store, each query written once with $1…$n, times through
//     s.time and the scanners of scan.go, lists through Dialect.List and
//     Dialect.In, row locks through Dialect.ForUpdate (PostgreSQL runs
//     every node at once; SQLite's one writer runs alone). Reads go to
//     db.Read(), single writes to db.Write(), anything that reads then
//     writes to db.Tx, which PostgreSQL may run again after a deadlock.
//  4. Conformance cases in store/storetest/<feature>.go, registered in
//     storetest.Run: both engines' tests run them.
//
// Engine-specific SQL is a Dialect member: add one only with a benchmark
// that shows the generic query falls short on that engine, and list it in
// store/sqlstore's doc.
package store
