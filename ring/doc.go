// Package ring decides which pusher node owns a push batch. The embedded
// default runs a one-node ring that owns everything; the cluster runs pusher
// nodes on a memberlist hash ring with virtual nodes, where a batch whose
// owner dies moves to the next owner.
//
// Hash (hash.go) is the immutable consistent hash both use: seedless FNV-1a
// 64 so every process computes the same owners, and Owners(key, n) names the
// node that takes a key over when its owner goes. Subpackage memberlist keeps
// a Hash over the live cluster members.
//
// The ring only answers "who owns this key"; it never sends pushes itself
// and knows nothing of them: routing a batch to its owner is the pusher's
// Router (package pusher).
package ring
