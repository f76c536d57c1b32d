// Package analytics is the role that records what happened to each push
// (sent, failed, expired) and what the service worker reported afterwards
// (delivered, clicked), and reads it back per notification: devices,
// variants, languages and errors of the notification detail.
//
// Implementations: SQLite (package analytics/sqlite) for the embedded
// default and ClickHouse for the cluster, where nodes record through a
// Journal: the events go to Kafka first, and sinks move them to ClickHouse
// in large batches, so none is lost when ClickHouse is down. Counters shown in lists live in the
// store; analytics holds the event log the breakdowns come from, and never
// decides delivery.
package analytics
