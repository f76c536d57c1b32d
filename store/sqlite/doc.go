// Package sqlite runs RelayBell's store (store/sqlstore) on one SQLite file,
// through the pure-Go modernc.org/sqlite driver, so that `relaybell serve`
// needs nothing installed. It holds only what is SQLite's: the connections
// and the dialect (db.go), whose DDL renders store/sqlstore's migrations.
// Every query is store/sqlstore's; SQLite runs the generic one of each
// dialect hook. testdata/previous holds the migrations as the last release
// before one list shipped them (SQLite's own 1–12, then 16–20), for the
// upgrade tests.
//
// # Connections
//
// SQLite allows one writer at a time. The store holds one writer connection
// (a *sql.DB limited to one connection, transactions begun IMMEDIATE) and a
// pool of read-only connections, so writers queue in Go instead of failing
// with SQLITE_BUSY, and readers never wait for them (WAL mode). A write is
// visible to the readers as soon as it commits.
//
// Every transaction runs on the writer (Store.write). Code inside it must go
// through its wtx only: asking the writer pool for anything else, including
// preparing a statement, would wait for the connection the transaction
// holds, forever.
//
// The WAL is checkpointed beside the writer, on a connection of its own
// (package wal), woken by each write as it is done (Store.finished): a
// checkpoint inside a commit held the writer, and every request waiting
// for a write, while it copied a thousand pages.
//
// Statements are prepared once per query text and reused (pool, wtx), since
// the driver would otherwise parse each anew, which costs more than running
// most of them. A write statement first seen inside a transaction runs
// unprepared once and is prepared after the transaction ends.
//
// Connections read the file through their page cache, not a mapping of
// it (mmap_size 0). Mapped (256 MiB), an audience walk alone took a third
// less time, but under writes, what the service always has, it cost more:
// a reader's cache starts empty after another connection's commit, and a
// profile of delivery receipts had a tenth of the process in the first
// read of each mapped page (btreeInitPage), page faults. Measured with
// writes going on (docs/scale-out.md, "The embedded store's file, read
// without a mapping"): a delivery receipt 1,354 and 1,313 µs of CPU mapped,
// 769 and 913 without; an event 667 and 673, 571 and 551; a broadcast to
// 30,000 browsers 194 and 178 µs a push, 153 and 156, and half the peak
// resident memory. The endpoints table is clustered by (website_id, shard,
// id), so an audience page reads one range of it (BenchmarkAudience: all
// against all-unclustered).
//
// Only the composition root and tests import this package.
package sqlite
