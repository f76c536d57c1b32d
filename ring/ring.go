package ring

import (
	"context"
	"fmt"

	"github.com/relaybell/relaybell/pusher"
)

// Ring maps a key to the node that owns it.
type Ring interface {
	// Owner returns the name of the node owning key.
	Owner(key string) string
	// Self is this process's node name.
	Self() string
}

// Single is the one-node ring of the embedded default.
type Single string

// Owner returns the only node.
func (s Single) Owner(string) string { return string(s) }

// Self returns the only node.
func (s Single) Self() string { return string(s) }

// Pusher delivers a batch; *pusher.Pusher is the local one.
type Pusher interface {
	Push(ctx context.Context, b pusher.Batch) error
}

// Router sends each batch to the pusher that owns it on the ring.
type Router struct {
	ring   Ring
	local  Pusher
	remote func(node string) (Pusher, error)
}

// NewRouter routes batches owned by this node to local and others through
// remote (nil in a one-node ring).
func NewRouter(r Ring, local Pusher, remote func(node string) (Pusher, error)) *Router {
	return &Router{ring: r, local: local, remote: remote}
}

// BatchKey is the ring key of a batch: the send, its shard and the first
// endpoint id, so the batches of a broadcast spread over every pusher.
func BatchKey(b pusher.Batch, shard int) string {
	first := ""
	if len(b.Recipients) > 0 {
		first = b.Recipients[0].Endpoint.ID
	}
	return fmt.Sprintf("%s/%d/%s", b.NotificationID, shard, first)
}

// Push delivers b through its owner.
func (r *Router) Push(ctx context.Context, key string, b pusher.Batch) error {
	owner := r.ring.Owner(key)
	if owner == r.ring.Self() || r.remote == nil {
		return r.local.Push(ctx, b)
	}
	p, err := r.remote(owner)
	if err != nil {
		return fmt.Errorf("reaching pusher %s: %w", owner, err)
	}
	return p.Push(ctx, b)
}
