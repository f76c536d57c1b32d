// Package sqlite is the embedded implementation of store.Store: RelayBell's
// metadata (accounts, websites, keys, subscribers and their browser
// endpoints, topics, segments, notifications and their delivery records) in
// one SQLite file, through the pure-Go modernc.org/sqlite driver, so that
// `relaybell serve` needs nothing installed. It passes the same conformance
// suite (store/storetest) as the PostgreSQL store.
//
// # Connections
//
// SQLite allows one writer at a time. The store holds one writer connection
// (a *sql.DB limited to one connection, transactions begun IMMEDIATE) and a
// pool of read-only connections, so writers queue in Go instead of failing
// with SQLITE_BUSY, and readers never wait for them (WAL mode). A write is
// visible to the readers as soon as it commits.
//
// Every write is one transaction on the writer (Store.write). Code inside it
// must go through its wtx only: asking the writer pool for anything else,
// including preparing a statement, would wait for the connection the
// transaction holds, forever.
//
// Statements are prepared once per query text and reused (pool, wtx), since
// the driver would otherwise parse each anew, which costs more than running
// most of them. A write statement first seen inside a transaction runs
// unprepared once and is prepared after the transaction ends.
//
// # Schema
//
// The schema lives in migrations/NNNN_name.sql, embedded and applied in
// order at Open; schema_migrations records the applied versions, and Open
// refuses a file migrated by a newer binary. Migrations are append-only:
// never edit one that has shipped. Times are unix milliseconds in UTC; JSON
// the store does not interpret is stored as given.
//
// # Hot paths
//
// Audience reads one range of the endpoints table, which is clustered by
// (website_id, shard, id), and joins subscribers by primary key: one query
// per page. RecordResults inserts a batch with one INSERT ... SELECT over
// json_each per outcome; the rows each changed are exactly the new results,
// which are the ones counted. deliveries is keyed by the notification's
// integer seq to keep the biggest table small. BenchmarkAudience and
// BenchmarkRecordResults measure these choices against the alternatives.
// Connections map up to 256 MiB of the file (mmap_size): page reads without
// a system call each, a third less time for an audience walk.
//
// The package holds no business rules beyond the store.Store contract
// (limits, scopes and which sends may start are the API's and fan-out's),
// and only the composition root and tests import it.
package sqlite
