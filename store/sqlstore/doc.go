// Package sqlstore is the one implementation of store.Store, written once
// and run on both engines: store/sqlite (the embedded default) and
// store/postgres (the cluster). An engine hands it a DB, its connections,
// and a Dialect, what differs between the engines; every query, column
// list, scan, transaction and rule is here, once. Both engines pass
// store/storetest, the conformance suite, with this code.
//
// # Connections
//
// Reads go to DB.Read (SQLite's read-only connections, PostgreSQL's pool),
// a single write to DB.Write (SQLite's one writer), and anything that reads
// then writes to DB.Tx: one IMMEDIATE transaction on SQLite's writer, one
// read-committed transaction on PostgreSQL that is run again after a
// deadlock or a serialization failure (and, with TxOptions.RetryUnique,
// after losing a race to insert the same key). A function given to Tx may
// therefore run more than once: it must not change anything outside the
// transaction. Placeholders are $1…$n on both engines.
//
// # Stored forms
//
// Times are written through Dialect.Time (unix milliseconds on SQLite, a
// timestamptz rounded to the microsecond on PostgreSQL) and read through
// the scanners of scan.go, which read either form. Booleans are INTEGER 0/1
// on SQLite and boolean on PostgreSQL; both drivers write and scan a Go
// bool. JSON is TEXT on SQLite and json or jsonb on PostgreSQL; the store
// writes it as text and reads it with jsonDest or rawJSONDest. Lists of
// strings are a JSON array on SQLite and a text[] on PostgreSQL
// (Dialect.List, In, Elems). Upserts are INSERT … ON CONFLICT and
// RETURNING, which both engines have.
//
// # Concurrency
//
// SQLite has one writer: its transactions run one at a time and need no
// locks. On PostgreSQL every node writes at once, so every conditional
// change is one statement whose condition is re-checked on the row it
// locks, or a transaction that locks first (Dialect.ForUpdate, LockRows,
// SkipLocked, Lock; "" or nothing on SQLite):
//
//   - DueScheduled picks due sends with FOR UPDATE SKIP LOCKED inside its
//     UPDATE: each send goes to exactly one caller, and callers don't wait
//     for each other.
//   - ShardsDone finishes a send with an UPDATE conditional on status
//     sending and every shard counted: exactly one call reports finished.
//   - RecordResults and RecordInteraction insert with ON CONFLICT DO
//     NOTHING: a concurrent duplicate waits for the first and is then
//     skipped, so it is counted once.
//   - Every insert into the webhook outbox holds webhookOutboxLock (an
//     advisory lock) from before the insert until it commits, so events
//     commit in seq order and a reader that continues after the last seq
//     it read misses none. It is taken last, after any row lock.
//   - A subscriber is marked unsubscribed only after locking its row and
//     re-reading its endpoints (markUnsubscribedIfEmpty), so a
//     registration adding an endpoint at the same time is never overlooked.
//   - Every deletion of endpoints records their removals (the stats'
//     history) in its transaction, after locking them in id order
//     (recordRemovals), or from the row it deleted (recordRemoval), so of
//     concurrent deletions of a browser (turned off while its push service
//     reports it gone) exactly one records it.
//
// Row locks are taken endpoints before subscribers, and where one statement
// locks several rows of a table, in id order. One exception: ErasePeople
// locks the people first (their lock keeps new browsers out while they
// go), then their endpoints; against a prune of one of those browsers that
// can deadlock, and PostgreSQL's transaction runner runs the loser again.
//
// # Migrations
//
// The schema's history is one list of versions in migrations/, each
// written once and run by both engines. Migrate applies the versions a
// database lacks, in one transaction under an advisory lock on PostgreSQL,
// and records each in schema_migrations, also one with nothing to do on
// the engine.
//
// To add a migration, write migrations/NNNN_name.sql, the next number, a
// text/template rendered with the engine's DDL (Dialect.DDL): a column type
// that differs between the engines is a placeholder such as {{.Time}}, the
// rest is written as it is (migrate.go tells how). Where an engine needs
// SQL no placeholder gives, the shared file names a block that
// NNNN_name.sqlite.sql and NNNN_name.postgres.sql each define; a change
// only one engine needs is that engine's file alone. Either is an engine
// exception, listed below with its reason. Shipped migrations are never
// edited: the engines' testdata/previous holds what the last release
// before one list shipped, and their upgrade tests check that a database
// made with it, at any version, ends at exactly a fresh one's schema.
//
// The engine exceptions:
//
//   - 0001_init: the first tables were written per engine. SQLite's
//     endpoints are clustered by (website_id, shard, id), its slugs are
//     NOCASE, its notifications' seq is the rowid and their documents
//     BLOBs, its deliveries reference their notification; PostgreSQL's
//     endpoint id is COLLATE "C" with an audience index, its slugs are
//     unique by lower(), its notifications have a fillfactor, its scopes
//     were a text[] (until 14), and it checks shards, outcomes and kinds.
//     Blocks scopes, shard_check, endpoints, topics, notifications,
//     deliveries, kind_check.
//   - 0003_labels, 0011_browsers, 0013_auth_version: triggers, in SQLite's
//     trigger bodies or PostgreSQL's plpgsql functions, and the labels'
//     backfill through each engine's JSON functions (blocks sync, bump);
//     0013's one row is keyed 1 on SQLite, true on PostgreSQL (block id).
//   - 0009_webhooks: a webhook's key is the seq rowid on SQLite, its id on
//     PostgreSQL (block keys).
//   - 0007_json_text, 0010_search, 0014_key_scopes_json,
//     0015_facets_byte_order, 0038_interactions_byte_order: PostgreSQL's
//     alone (jsonb to json, the trigram index, scopes to JSON, byte-order
//     facets and interactions' endpoint ids): SQLite already had what they
//     make, or has no such index.
//   - 0036_people_version: the version's one row and the triggers that
//     move it (blocks id, bump).
//   - 0039_push_ledger: the results moved from deliveries into the push
//     ledger are joined into runs by string_agg on PostgreSQL,
//     group_concat on SQLite (block move).
//   - 0041_people_moved: PostgreSQL's alone: the version's trigger also
//     marks its connection, so that a transaction that moved the version
//     waits out the nodes' leases on it (store/postgres, PeopleLease).
//     The embedded default is one node, which reads the version for every
//     batch of lookups.
//
// SQLite numbered its versions on its own before the list: its 10–12 are
// the list's 11–13, and it recorded nothing for 10, 14 and 15. Migrate
// translates such a database's schema_migrations once (renumberSQLite);
// its schema needs no change.
//
// # Engine-specific code
//
// The Dialect's members are the differences in SQL every engine has: the
// stored time (Time, TimeType), lists (List, In, Elems), row locks
// (ForUpdate, LockRows, SkipLocked), the advisory lock (Lock), search
// (ContainsFold, Contains: instr on SQLite, strpos on PostgreSQL), JSON
// merge (MergeJSON), a new identity value (NewSeq) and errors (MapErr).
//
// Beyond those, an engine may only replace a query with one of its own
// where a benchmark shows the generic one falls short on it. These are the
// three hooks, all PostgreSQL's (store/postgres/fast_*.go); nil or "" is the
// generic query, which SQLite runs:
//
//   - AudienceFrom: an audience page looks each endpoint's subscriber up by
//     key (LATERAL … OFFSET 0) instead of a hash join over every subscriber
//     of the store. BenchmarkAudience/all at 100k recipients: 12 µs a
//     recipient against 30; TestAudienceLooksEachSubscriberUp checks the
//     plan.
//   - ScanTime: pgx scans a timestamptz into a *time.Time without the three
//     allocations of a sql.Scanner (BenchmarkAudience).
//   - AddRateCounts: an API node's sync of its public-route counts (package
//     ratelimit) is one statement over unnest instead of one per key.
//     BenchmarkAddRateCounts: 10 ms against 98 ms for 1,000 keys.
//
// A new hook needs the same: a benchmark in the engine's package that runs
// the generic query beside it, and a line here.
//
// One more difference is not a hook but what an engine's connection can
// do: PostgreSQL's is a Pipeliner, so that statements of a transaction
// that depend on nothing of each other's go in one round trip (a pgx
// batch); SQLite's runs them one by one (Pipeline). The statements are
// the same on both. The webhook deliveries of an event and a send's waves
// (execEach), and a batch of registrations' updates and inserts, go so.
// BenchmarkQueueWebhookDeliveries: pipelined against one by one;
// BenchmarkRegisterCPU/again-batch16: PostgreSQL 93 to 99 µs a
// registration against 108 to 110.
package sqlstore
