// Package kafka is the cluster implementation of bus.Bus on Apache Kafka
// (franz-go). It owns the bus topics (created at Open when missing), one
// idempotent producer shared by every Publish, and one consumer-group member
// per Consume call. It must never hold state a restart needs: everything
// durable lives in Kafka (records and committed group offsets).
//
// # Delivery
//
// Publish waits for the record's acknowledgement from all in-sync replicas,
// so a nil error means the record is durable. Records are keyed by the key
// given (intents by website id, so one website's intents stay on one
// partition in order).
//
// Consume is at-least-once. Each partition is processed in offset order, one
// record at a time, and up to parallel partitions are processed at once: a
// member that owns fewer partitions than parallel runs fewer handlers. This
// keeps committing trivial and correct: the committed offset of a partition
// is always just past the last record whose handler returned nil, and every
// earlier record of the partition is done by construction. A record whose
// handler fails stays at the head of its partition's backlog and is retried
// after a backoff (Config.RetryBackoff doubling up to Config.MaxRetryBackoff)
// while other partitions go on; a partition holding maxBacklog records
// behind a failing one stops fetching until it drains.
// Records are redelivered after a crash or a rebalance (handlers are
// idempotent).
//
// # Concurrency
//
// A consumer loops: poll (kgo.BlockRebalanceOnPoll) -> run handlers for the
// ready partitions and wait for them -> commit the done prefixes -> pause or
// resume partitions -> AllowRebalance. kgo runs the revoke and lost callbacks
// only while rebalancing is allowed, so they never overlap a round; they
// commit what is done and drop the in-memory backlog of partitions that leave
// (the next owner reads them again from the committed offset). consumer.mu is
// held for a whole round and by the callbacks; handler goroutines touch only
// their own partition's state, handed to them for the round. A round must end
// within the group's rebalance timeout (kgo default 60 s), so handlers should
// be short: a round holds at most pollRecords records.
//
// Shutdown (Consume's context ends): no new records start, in-flight
// handlers finish, done offsets are committed, the member leaves the group
// and its client is closed.
package kafka
