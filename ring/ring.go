package ring

import (
	"context"
	"errors"
	"fmt"

	"github.com/relaybell/relaybell/pusher"
)

// Ring maps a key to the nodes that own it.
type Ring interface {
	// Owners returns up to n distinct nodes for key, the owner first and
	// then the nodes that take over when the ones before them are gone.
	Owners(key string, n int) []string
	// Self is this process's node name.
	Self() string
}

// Single is the one-node ring of the embedded default.
type Single string

// Owners returns the only node.
func (s Single) Owners(string, int) []string { return []string{string(s)} }

// Self returns the only node.
func (s Single) Self() string { return string(s) }

// Pusher delivers a batch; *pusher.Pusher is the local one.
type Pusher interface {
	Push(ctx context.Context, b pusher.Batch) error
}

// ErrNoPusher is returned when the ring has no node to own a batch.
var ErrNoPusher = errors.New("ring: no pusher on the ring")

// maxTries is how many owners of a batch are tried in ring order before
// Push gives up.
const maxTries = 3

// Router sends each batch to the pusher that owns it on the ring.
type Router struct {
	ring   Ring
	local  Pusher
	remote func(node string) (Pusher, error)
}

// NewRouter routes batches owned by this node to local (nil on a node that
// does not push) and others through remote (nil in a one-node ring).
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

// Push delivers b through its owner and returns once every outcome is
// recorded. When the owner cannot be reached or says the batch is not done
// (it died mid-batch, say, before the ring noticed), the batch goes to the
// next owner in ring order; endpoints already recorded are skipped there, so
// nobody gets a push twice for a redone batch. Push fails only when every
// candidate failed, and the caller retries the batch later.
func (r *Router) Push(ctx context.Context, key string, b pusher.Batch) error {
	owners := r.ring.Owners(key, maxTries)
	if len(owners) == 0 {
		return ErrNoPusher
	}
	var errs []error
	for _, node := range owners {
		err := r.pushTo(ctx, node, b)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (r *Router) pushTo(ctx context.Context, node string, b pusher.Batch) error {
	switch {
	case node == r.ring.Self() && r.local != nil:
		return r.local.Push(ctx, b)
	case r.remote == nil:
		return fmt.Errorf("%w: %s is not this node and there is no way to reach others", ErrNoPusher, node)
	}
	p, err := r.remote(node)
	if err != nil {
		return fmt.Errorf("reaching pusher %s: %w", node, err)
	}
	if err := p.Push(ctx, b); err != nil {
		return fmt.Errorf("pusher %s: %w", node, err)
	}
	return nil
}
