// Package clickhouse keeps the analytics event log in ClickHouse for the
// cluster mode, over the native protocol (clickhouse-go v2).
//
// It owns one database (Config.Database) holding two MergeTree tables,
// events (of pushes) and behaviors (the behavioral events websites post),
// both partitioned by UTC day so that retention is DROP PARTITION of whole
// days (DropBefore). A cluster writes it through analytics.Journal: the
// nodes' events go to Kafka, and sinks insert them here about once a
// second each, since every insert into a MergeTree makes a part of its own
// (a few ms of server CPU, and merging later). An acknowledged insert is in
// the table's files, so the server process's death loses nothing the sinks
// wrote, and what they had not written waits in Kafka. It must never
// decide delivery, and its schema and
// queries stay in the subset both Debian's ClickHouse 18.16 and current
// releases run: explicit column lists on every INSERT, no TTL, DateTime64,
// Map, server-side parameters or async inserts. Reports are built with
// analytics.Breakdown, the code path the SQLite store shares.
package clickhouse
