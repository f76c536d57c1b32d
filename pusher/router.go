package pusher

import (
	"context"
	"errors"
	"fmt"

	"github.com/relaybell/relaybell/ring"
)

// Deliverer delivers a batch: *Pusher is the local one, *Remote a pusher
// node reached over the cluster's batch wire.
type Deliverer interface {
	Push(ctx context.Context, b Batch) error
}

// ErrNoPusher is returned when the ring has no node to own a batch.
var ErrNoPusher = errors.New("pusher: no pusher on the ring")

// maxTries is how many owners of a batch are tried in ring order before
// Push gives up.
const maxTries = 3

// Router sends each batch to the pusher that owns it on the ring.
type Router struct {
	ring   ring.Ring
	local  Deliverer
	remote func(node string) (Deliverer, error)
}

// NewRouter routes batches owned by this node to local (nil on a node that
// does not push) and others through remote (nil in a one-node ring).
func NewRouter(r ring.Ring, local Deliverer, remote func(node string) (Deliverer, error)) *Router {
	return &Router{ring: r, local: local, remote: remote}
}

// BatchKey is the ring key of a batch: the send, its shard and the first
// endpoint id, so the batches of a broadcast spread over every pusher.
func BatchKey(b Batch, shard int) string {
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
func (r *Router) Push(ctx context.Context, key string, b Batch) error {
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

func (r *Router) pushTo(ctx context.Context, node string, b Batch) error {
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
