// Package ring decides which pusher node owns a push batch. The embedded
// default runs a one-node ring that owns everything; the cluster runs pusher
// nodes on a memberlist hash ring with virtual nodes, where a batch whose
// owner dies moves to the next owner.
//
// The ring only answers "who owns this key"; it never sends pushes itself.
package ring
