package pusher

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/relaybell/relaybell/ring"
)

type fixedRing struct {
	self   string
	owners []string
}

func (r fixedRing) Owners(_ string, n int) []string { return r.owners[:min(n, len(r.owners))] }
func (r fixedRing) Self() string                    { return r.self }

// recPusher records which node got each batch and fails when told to.
type recPusher struct {
	node string
	err  error
	log  *[]string
	mu   *sync.Mutex
}

func (p recPusher) Push(context.Context, Batch) error {
	p.mu.Lock()
	*p.log = append(*p.log, p.node)
	p.mu.Unlock()
	return p.err
}

func TestRouterFallsThroughToNextOwner(t *testing.T) {
	var (
		mu  sync.Mutex
		log []string
	)
	down := errors.New("connection refused")
	nodes := map[string]recPusher{
		"p0": {node: "p0", err: down, log: &log, mu: &mu},
		"p1": {node: "p1", log: &log, mu: &mu},
		"p2": {node: "p2", log: &log, mu: &mu},
	}
	remote := func(node string) (Deliverer, error) { return nodes[node], nil }
	b := Batch{NotificationID: "n", WebsiteID: "w"}

	r := NewRouter(fixedRing{self: "f0", owners: []string{"p0", "p1", "p2"}}, nil, remote)
	if err := r.Push(t.Context(), "k", b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(log, []string{"p0", "p1"}) {
		t.Fatalf("tried %v, want p0 then p1", log)
	}

	// Every owner failing is an error naming each, and no more than
	// maxTries are tried.
	log = nil
	for k, p := range nodes {
		p.err = down
		nodes[k] = p
	}
	r = NewRouter(fixedRing{self: "f0", owners: []string{"p0", "p1", "p2", "p3"}}, nil, remote)
	err := r.Push(t.Context(), "k", b)
	if !errors.Is(err, down) || len(log) != maxTries {
		t.Fatalf("err = %v after %v", err, log)
	}

	// The node's own batches go to the local pusher, not over the network.
	log = nil
	local := recPusher{node: "local", log: &log, mu: &mu}
	r = NewRouter(fixedRing{self: "p1", owners: []string{"p1"}}, local, remote)
	if err := r.Push(t.Context(), "k", b); err != nil || !slices.Equal(log, []string{"local"}) {
		t.Fatalf("err %v, tried %v", err, log)
	}

	// An empty ring has nobody to push.
	r = NewRouter(fixedRing{self: "f0"}, nil, remote)
	if err := r.Push(t.Context(), "k", b); !errors.Is(err, ErrNoPusher) {
		t.Fatalf("empty ring: %v", err)
	}

	// A canceled caller stops at once.
	log = nil
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r = NewRouter(fixedRing{self: "f0", owners: []string{"p0", "p1"}}, nil, remote)
	if err := r.Push(ctx, "k", b); !errors.Is(err, context.Canceled) || len(log) != 1 {
		t.Fatalf("canceled: %v after %v", err, log)
	}

	// The embedded default: a one-node ring and the local pusher.
	log = nil
	r = NewRouter(ring.Single("me"), local, nil)
	if err := r.Push(t.Context(), "k", b); err != nil || !slices.Equal(log, []string{"local"}) {
		t.Fatalf("single: %v %v", err, log)
	}
}
