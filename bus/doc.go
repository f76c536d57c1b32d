// Package bus carries work between roles: send intents from api to fanout
// (topic Intents, keyed by website id) and per-shard expansion tasks among
// fanout workers (topic Shards); in a cluster also analytics events on their
// way to ClickHouse (topic Events, see analytics.Journal). A handler that returns nil acknowledges its
// message; an error, or a crash before returning, gets it delivered again, so
// handlers must be idempotent.
//
// Implementations: Embedded, a durable queue in a SQLite file for the
// single-process default, and Kafka for the cluster. The Outbox makes "202
// means durable" true across both: a send is committed to the store first,
// its intent published after, and a sweep re-drives intents that never made
// it.
package bus
