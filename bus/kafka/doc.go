// Package kafka is the cluster implementation of bus.Bus on Apache Kafka
// (franz-go). It owns the bus topics (created at Open when missing), one
// idempotent producer shared by every Publish, and one consumer-group member
// per Consume or ConsumeBatches call. It must never hold state a restart needs: everything
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
// ConsumeBatches is the other way to read a topic, for a sink that writes
// records elsewhere in bulk: it hands over what arrived within a window,
// commits it once written, and on a failed write leaves the group and
// rejoins to read the batch again (see its doc).
//
// # Concurrency
//
// A consumer loops: poll (kgo.BlockRebalanceOnPoll) -> hand ready
// partitions to drainer goroutines, up to parallel at once -> commit the done
// prefixes -> pause or resume partitions -> AllowRebalance. A drainer works
// through one partition's backlog and ends when it is empty or its head
// failed; its end wakes the poll, so another partition starts at once.
// Drainers run across polls: records arriving on other partitions start as
// soon as a drainer is free, not when the slowest of a batch of partitions
// is done (a fan-out node's shard tasks go out side by side). consumer.mu
// guards all partition state; a drainer holds it except while its handler
// runs. kgo runs the revoke and lost callbacks only while rebalancing is
// allowed; they ask the drainers of the leaving partitions to stop after
// their current record, wait for them, commit what is done (revoke only)
// and drop the in-memory backlog (the next owner reads it again from the
// committed offset). A handler must end within the group's rebalance
// timeout (kgo default 60 s), since a rebalance waits for it.
//
// Shutdown (Consume's context ends): no new records start, in-flight
// handlers finish, done offsets are committed, the member leaves the group
// and its client is closed.
package kafka
