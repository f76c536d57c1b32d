// Package postgres is the cluster implementation of store.Store: RelayBell's
// metadata (accounts, websites, keys, subscribers and their browser
// endpoints, topics, segments, notifications and their delivery records) in
// PostgreSQL, through a pgx connection pool, shared by every node of the
// cluster. It passes the same conformance suite (store/storetest) as the
// SQLite store and behaves as it does; where the two differ for PostgreSQL's
// sake, the method's comment says so.
//
// # Schema
//
// The schema lives in migrations/NNNN_name.sql, embedded and applied at
// Open in one transaction that holds an advisory lock (pg_advisory_xact_lock
// keyed by the schema), so nodes starting together apply each migration once
// and never see half of one; schema_migrations records the applied versions,
// and Open refuses a database migrated by a newer binary. Migrations are
// append-only: never edit one that has shipped. Times are timestamptz, kept
// to the microsecond (the store rounds every time it writes) and returned in
// UTC; JSON is jsonb, which may reformat a document but not change it.
//
// # Concurrency
//
// Every node writes at once, so every conditional change is one statement
// whose condition PostgreSQL re-checks on the row it locks (read committed):
//
//   - DueScheduled picks due sends with FOR UPDATE SKIP LOCKED inside its
//     UPDATE: each send goes to exactly one caller, and callers don't wait
//     for each other.
//   - ShardDone finishes a send with an UPDATE conditional on status
//     sending and every shard counted: exactly one call reports finished.
//   - RecordResults and RecordInteraction insert with ON CONFLICT DO
//     NOTHING: a concurrent duplicate waits for the first and is then
//     skipped, so it is counted once.
//   - Every insert into the webhook outbox holds an advisory lock
//     (outboxLock) from before the insert until it commits, so events
//     commit in seq order and a reader that continues after the last seq it
//     read misses none. ShardDone takes it last, after the notification's
//     row lock.
//   - A subscriber is marked unsubscribed only after locking its row and
//     re-reading its endpoints (markUnsubscribedIfEmpty), so a registration
//     adding an endpoint at the same time is never overlooked.
//
// Row locks are taken endpoints before subscribers, and where one statement
// locks several rows of a table (a batch of results, the subscribers of
// pruned endpoints) in id order. A transaction that still meets a deadlock
// or a serialization failure is run again (Store.inTx); so is a
// registration that lost a race to create the same endpoint or external id.
//
// # Hot paths
//
// Audience is one keyset query per page: one range of the endpoints_audience
// index (website_id, shard, id) and a primary-key lookup of each subscriber.
// RecordResults is one statement per batch: an INSERT over unnest of two
// arrays, ON CONFLICT DO NOTHING RETURNING the new rows, which the same
// statement counts into the notification; pruned endpoints are deleted in
// the same transaction. deliveries is keyed by the notification's bigint
// seq to keep the biggest table small. BenchmarkAudience and
// BenchmarkRecordResults measure these against the SQLite store's.
//
// The package holds no business rules beyond the store.Store contract, and
// only the composition root and tests import it.
package postgres
