// Package analytics is the role that records what happened to each push
// (sent, failed, expired) and what the service worker reported afterwards
// (delivered, clicked), and reads it back per notification: devices,
// variants, languages and errors of the notification detail. It also keeps
// the behavioral events websites post (Behavior: a purchase, a sign-up),
// listed per website and per person; what an event triggers (conversions,
// automations, journeys) is decided by the caller before recording it.
//
// Implementations: SQLite (package analytics/sqlite) for the embedded
// default and ClickHouse for the cluster, where nodes record through a
// Journal: the events go to Kafka first, and sinks move them to ClickHouse
// in large batches, so none is lost when ClickHouse is down. Counters shown in lists live in the
// store; analytics holds the event log the breakdowns come from, and never
// decides delivery.
package analytics
