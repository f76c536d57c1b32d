// Package clickhouse keeps the analytics event log in ClickHouse for the
// cluster mode, over the native protocol (clickhouse-go v2).
//
// It owns one database (Config.Database) holding one MergeTree table,
// events, partitioned by UTC day so that retention is DROP PARTITION of whole
// days (DropBefore), and a Buffer table in front of it, events_buffer,
// through which events are written and read (see createBuffer: the
// server turns the many small inserts of a cluster into a part every
// second or two, and loses the last seconds' events only if it dies
// abruptly). It must never decide delivery, and its schema and
// queries stay in the subset both Debian's ClickHouse 18.16 and current
// releases run: explicit column lists on every INSERT, no TTL, DateTime64,
// Map, server-side parameters or async inserts. Reports are built with
// analytics.Breakdown, the code path the SQLite store shares.
package clickhouse
