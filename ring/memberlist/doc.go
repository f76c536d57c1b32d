// Package memberlist runs the cluster's pusher ring on hashicorp/memberlist.
// Each node joins the gossip cluster with its name and metadata (for example
// the HTTP address where it takes push batches); every node builds the same
// consistent Hash over the live members, so all of them agree on a key's
// owner once gossip has settled.
//
// It owns membership and the current Hash, and tells watchers when either
// changes. It never sends pushes or moves batches itself: the fan-out reacts
// to Events and re-routes.
//
// Concurrency: memberlist calls the event delegate serially. The delegate
// takes Ring.mu, updates the member map, publishes a new snapshot (members and
// Hash) through an atomic.Pointer, and queues an Event for each watcher. Reads
// (Owner, Owners, Members) only load the pointer and never lock. Lock order:
// Ring.life (Leave, Shutdown) → memberlist's node lock (held while it calls
// the delegate) → Ring.mu → watcher.mu. Nothing calls into memberlist while
// holding Ring.mu.
package memberlist
