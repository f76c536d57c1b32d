package defcache

import (
	"context"
	"log/slog"
	"maps"
	"time"

	"github.com/relaybell/relaybell/store"
)

// maxPeople bounds the keys People keeps, every website's together: past
// it, the cache starts again empty.
const maxPeople = 100_000

// PeopleBase is what People reads.
type PeopleBase interface {
	PersonRefs(ctx context.Context, websiteID string, keys []string) (map[string]store.PersonRef, error)
	PeopleVersion(ctx context.Context) (int64, error)
}

// People answers person lookups (store.Behavior.PersonRefs) from the
// refs found before, while the people version (PeopleVersion) has not
// moved. Triggers move the version in the transaction of every change to
// what PersonRefs answers for a key that named somebody (an external id
// set, changed or cleared; a subscriber deleted), whatever node or store
// method made it.
//
// Unlike the definitions, a change whose call returned before a batch of
// lookups began is seen by every node, as a read of the store would see
// it, so a cached answer never differs from the store's. A store that
// offers a lease on the version (PeopleLease, below) waits out every
// node's lease before a call that moved the version returns: the cache
// then trusts a version read for the lease's length from when it was
// sent. Over any other store the version is read on every Refs call,
// before anything is answered from the cache (a TTL of 0). A batch whose
// keys are all known costs at most one read of one row, where PersonRefs
// reads two indexes per key.
//
// Only keys that named somebody are kept; a key naming nobody is read
// each time (a new subscriber does not move the version).
type People struct {
	base PeopleBase
	v    versioned
	refs map[personKey]store.PersonRef // guarded by v.mu
}

type personKey struct{ websiteID, key string }

// NewPeople returns a cache of base's person lookups.
func NewPeople(base PeopleBase, logger *slog.Logger) *People {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &People{base: base, refs: map[personKey]store.PersonRef{}}
	p.v = versioned{read: base.PeopleVersion, what: "people version", logger: logger,
		drop: func() { clear(p.refs) }}
	if l, ok := base.(PeopleLeaser); ok {
		p.v.ttl = l.PeopleLease()
	}
	return p
}

// PeopleLeaser is a PeopleBase whose every call that moves the people
// version returns only PeopleLease after its commit (store/postgres): a
// version read is then good for that long on every node.
type PeopleLeaser interface {
	PeopleLease() time.Duration
}

// Refs answers PersonRefs of each website's keys (keys by website id), as
// of after the call began: the version is read first, then the keys not
// cached are read, a store call per website.
func (p *People) Refs(ctx context.Context, keys map[string][]string) (map[string]map[string]store.PersonRef, error) {
	gen, trusted := p.v.fresh(ctx)
	out := make(map[string]map[string]store.PersonRef, len(keys))
	for site, list := range keys {
		found := make(map[string]store.PersonRef, len(list))
		var missing []string
		p.v.mu.Lock()
		for _, k := range list {
			if ref, hit := p.refs[personKey{site, k}]; hit && trusted {
				found[k] = ref
			} else {
				missing = append(missing, k)
			}
		}
		p.v.mu.Unlock()
		if len(missing) > 0 {
			read, err := p.base.PersonRefs(ctx, site, missing)
			if err != nil {
				return nil, err
			}
			if trusted {
				p.put(site, gen, read)
			}
			maps.Copy(found, read)
		}
		out[site] = found
	}
	return out, nil
}

// put keeps the refs read of the website, unless a purge came since gen.
func (p *People) put(websiteID string, gen uint64, read map[string]store.PersonRef) {
	p.v.fill(gen, func() {
		if len(p.refs)+len(read) > maxPeople {
			clear(p.refs) // what is kept is still true: no purge
		}
		for k, ref := range read {
			p.refs[personKey{websiteID, k}] = ref
		}
	})
}
