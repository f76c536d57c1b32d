// Package defcache keeps, per website, the definitions that every event
// and every registration reads: the active automations, the active
// journeys, whether the website has any journey at all, the goals of each
// event name, the tag goals, the segments, and the identity verification
// (mode and secrets) that registrations naming a person check; and what
// the browser SDK's public routes read (public.go): the prompt and welcome
// settings, the active on-site messages and the segments they target,
// compiled, and the topics. Without it each POST /events
// naming a person read them from the store again (four to six queries),
// and each registration as many.
//
// A cached answer holds until the store's definitions version
// (store.Automations.DefinitionsVersion) moves: triggers move it in the
// transaction of any change to those tables, made by any node, and the
// writers of the settings, on-site messages and topics in theirs. The cache
// reads the version at most once per TTL, on the path of the first
// request after the TTL, and drops everything when it moved; the node a
// change was made through drops its cache at once (Purge, which the API
// calls after every write it serves). A node so acts on a definition
// changed through another node within about TTL, as it would had it read
// the store a moment before the change.
//
// A fill that read the store before a purge does not put its answer back
// (generations), so a purge is never undone by a slow reader. Requests
// that miss the same entry together (a burst at a cold cache, or after a
// purge) share one read of the store (lookup).
//
// People caches the person refs of events the same way, behind the
// people version, read before every batch of lookups (see people.go).
package defcache

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/relaybell/relaybell/audience"
	"github.com/relaybell/relaybell/automations"
	"github.com/relaybell/relaybell/goals"
	"github.com/relaybell/relaybell/journeys"
	"github.com/relaybell/relaybell/store"
)

// DefaultTTL is how long a read of the definitions version is trusted.
const DefaultTTL = 250 * time.Millisecond

// maxEventNames bounds the event names whose goals are kept per website
// (names are the caller's: beyond it, the rest are read each time).
const maxEventNames = 1000

// Base is what the services the cache serves read and write.
type Base interface {
	automations.Store
	automations.SegmentStore
	journeys.Store
	goals.Store
	IdentityVerification(ctx context.Context, websiteID string) (store.IdentityVerification, error)
	PublicBase
}

// Store is base with the definitions' reads answered from the cache; every
// other method is base's.
type Store struct {
	Base
	v       versioned
	sites   map[string]*site      // guarded by v.mu
	flights map[flightKey]*flight // the store reads going on, guarded by v.mu
}

// site is one website's cached definitions; a nil member is not cached.
type site struct {
	automations []store.Automation // active, every trigger type
	journeys    []store.Journey    // active, every entry type
	hasJourneys *bool              // any journey, whatever its status
	eventGoals  map[string][]store.Goal
	tagGoals    []store.Goal // empty, not nil, when read and none
	segments    map[string]store.Segment
	identity    *store.IdentityVerification
	// settings are the settings documents (public.go) by name; a nil
	// document was never set.
	settings map[string][]byte
	onsite   []OnsiteMessage // active, oldest first; empty, not nil, when read and none
	// selectors are the segments compiled, by id; nil: no such segment.
	selectors map[string]*audience.Selector
	topics    []store.Topic // empty, not nil, when read and none
}

// New returns base with its definitions cached, the version trusted for
// ttl (0: read before every cached answer; DefaultTTL when negative).
func New(base Base, ttl time.Duration, logger *slog.Logger) *Store {
	if ttl < 0 {
		ttl = DefaultTTL
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{Base: base, sites: map[string]*site{}, flights: map[flightKey]*flight{}}
	s.v = versioned{read: base.DefinitionsVersion, what: "definitions version", ttl: ttl, logger: logger,
		drop: func() { clear(s.sites) }}
	return s
}

// Purge drops every cached definition: the caller just changed some.
func (s *Store) Purge() {
	s.v.mu.Lock()
	s.v.purgeLocked()
	s.v.mu.Unlock()
}

// flight is a store read that callers missing the same entry at the same
// generation share (lookup): a burst of requests at a cold cache, or
// after a purge, reads the store once, not once each.
type flight struct {
	done    chan struct{} // closed when val, err and gone are set
	val     any
	err     error
	gone    bool // the reader's request ended while it read: err is not the store's answer
	waiters int  // callers that joined it (under mu; for the tests)
}

// entry names a cached answer of a website: its kind, and its name
// within the kind ("" for the kinds with one answer a website).
type entry struct{ kind, name string }

// flightKey is an entry of a website at a generation: a request after a
// purge does not join a read from before it.
type flightKey struct {
	gen       uint64
	websiteID string
	entry
}

// lookup answers from the website's cached entry (hit, called with mu
// held, reports it and whether it is cached), or else reads the store
// (read) and keeps the answer (keep, called with mu held) unless a purge
// came meanwhile. Concurrent misses of the same entry share one read; when
// the reader's request went away (its context ended) before the answer,
// the callers waiting for it look up again (one of them reads). When the
// version cannot be read, the store is read and nothing kept. The answer
// may be shared with the cache and other callers: a caller that hands it
// on clones what may change.
func lookup[T any](ctx context.Context, s *Store, websiteID string, e entry,
	hit func(*site) (T, bool), read func(context.Context) (T, error), keep func(*site, T)) (T, error) {
	for {
		if _, ok := s.v.fresh(ctx); !ok {
			return read(ctx)
		}
		s.v.mu.Lock()
		// The generation now, not fresh's: a purge since then must not let
		// this request join a read from before it.
		key := flightKey{s.v.gen, websiteID, e}
		if st := s.sites[websiteID]; st != nil {
			if v, cached := hit(st); cached {
				s.v.mu.Unlock()
				return v, nil
			}
		}
		f := s.flights[key]
		if f == nil {
			f = &flight{done: make(chan struct{}), err: errNoAnswer}
			s.flights[key] = f
			s.v.mu.Unlock()
			return lead(ctx, s, f, key, read, keep)
		}
		f.waiters++
		s.v.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
		if f.gone && ctx.Err() == nil {
			continue
		}
		v, _ := f.val.(T)
		return v, f.err
	}
}

// lead reads for the flight f of key, keeps the answer unless a purge
// came since key's generation, and hands it to the callers waiting.
func lead[T any](ctx context.Context, s *Store, f *flight, key flightKey,
	read func(context.Context) (T, error), keep func(*site, T)) (T, error) {
	defer func() {
		s.v.mu.Lock()
		delete(s.flights, key)
		if f.err == nil && s.v.gen == key.gen {
			st := s.sites[key.websiteID]
			if st == nil {
				st = &site{}
				s.sites[key.websiteID] = st
			}
			keep(st, f.val.(T))
		}
		s.v.mu.Unlock()
		close(f.done)
	}()
	v, err := read(ctx)
	f.val, f.err, f.gone = v, err, ctx.Err() != nil
	return v, err
}

// errNoAnswer is what the callers sharing a read get when the reader
// ended without an answer (it panicked).
var errNoAnswer = errors.New("cache: the shared store read ended without an answer")

// ActiveAutomations answers from the website's active automations, read
// once.
func (s *Store) ActiveAutomations(ctx context.Context, websiteID string, triggerTypes ...string) ([]store.Automation, error) {
	all, err := lookup(ctx, s, websiteID, entry{kind: "automations"},
		func(st *site) ([]store.Automation, bool) { return st.automations, st.automations != nil },
		func(ctx context.Context) ([]store.Automation, error) {
			return nonNil(s.Base.ActiveAutomations(ctx, websiteID))
		},
		func(st *site, list []store.Automation) { st.automations = list })
	if err != nil {
		return nil, err
	}
	return ofTypes(all, triggerTypes, func(a store.Automation) string { return a.TriggerType }), nil
}

// ActiveJourneys answers from the website's active journeys, read once.
func (s *Store) ActiveJourneys(ctx context.Context, websiteID string, entryTypes ...string) ([]store.Journey, error) {
	all, err := lookup(ctx, s, websiteID, entry{kind: "journeys"},
		func(st *site) ([]store.Journey, bool) { return st.journeys, st.journeys != nil },
		func(ctx context.Context) ([]store.Journey, error) {
			return nonNil(s.Base.ActiveJourneys(ctx, websiteID))
		},
		func(st *site, list []store.Journey) { st.journeys = list })
	if err != nil {
		return nil, err
	}
	return ofTypes(all, entryTypes, func(j store.Journey) string { return j.EntryType }), nil
}

// ofTypes is a new list of those of all whose type (typeOf) is one of
// types; of all of them when types is empty.
func ofTypes[T any](all []T, types []string, typeOf func(T) string) []T {
	out := make([]T, 0, len(all))
	for _, d := range all {
		if len(types) == 0 || slices.Contains(types, typeOf(d)) {
			out = append(out, d)
		}
	}
	return out
}

// nonNil is a read's answer with an empty list for none: the cache keeps
// "read, none" apart from "not read" (nil).
func nonNil[T any](list []T, err error) ([]T, error) {
	if list == nil {
		list = []T{}
	}
	return list, err
}

// HasJourneys reports whether the website has any journey, whatever its
// status: without one, nobody has an enrolment (journeys.Service skips
// reading a person's on their events).
func (s *Store) HasJourneys(ctx context.Context, websiteID string) (bool, error) {
	return lookup(ctx, s, websiteID, entry{kind: "has journeys"},
		func(st *site) (bool, bool) { return st.hasJourneys != nil && *st.hasJourneys, st.hasJourneys != nil },
		func(ctx context.Context) (bool, error) { return s.Base.HasJourneys(ctx, websiteID) },
		func(st *site, has bool) { st.hasJourneys = &has })
}

// EventGoals answers from the website's goals of the event name, read
// once per name.
func (s *Store) EventGoals(ctx context.Context, websiteID, event string) ([]store.Goal, error) {
	list, err := lookup(ctx, s, websiteID, entry{"goals", event},
		func(st *site) ([]store.Goal, bool) { list, hit := st.eventGoals[event]; return list, hit },
		func(ctx context.Context) ([]store.Goal, error) { return s.Base.EventGoals(ctx, websiteID, event) },
		func(st *site, list []store.Goal) {
			if st.eventGoals == nil {
				st.eventGoals = map[string][]store.Goal{}
			}
			if len(st.eventGoals) < maxEventNames {
				st.eventGoals[event] = list
			}
		})
	return slices.Clone(list), err
}

// TagGoals answers from the website's tag goals, read once.
func (s *Store) TagGoals(ctx context.Context, websiteID string) ([]store.Goal, error) {
	list, err := lookup(ctx, s, websiteID, entry{kind: "tag goals"},
		func(st *site) ([]store.Goal, bool) { return st.tagGoals, st.tagGoals != nil },
		func(ctx context.Context) ([]store.Goal, error) { return nonNil(s.Base.TagGoals(ctx, websiteID)) },
		func(st *site, list []store.Goal) { st.tagGoals = list })
	if err != nil {
		return nil, err
	}
	return slices.Clone(list), nil
}

// Segment answers from the website's segments, each read once; an
// unknown one is read each time.
func (s *Store) Segment(ctx context.Context, websiteID, id string) (store.Segment, error) {
	return lookup(ctx, s, websiteID, entry{"segment", id},
		func(st *site) (store.Segment, bool) { seg, hit := st.segments[id]; return seg, hit },
		func(ctx context.Context) (store.Segment, error) { return s.Base.Segment(ctx, websiteID, id) },
		func(st *site, seg store.Segment) {
			if st.segments == nil {
				st.segments = map[string]store.Segment{}
			}
			if len(st.segments) < maxEventNames {
				st.segments[id] = seg
			}
		})
}

// IdentityVerification answers from the website's identity verification,
// read once.
func (s *Store) IdentityVerification(ctx context.Context, websiteID string) (store.IdentityVerification, error) {
	iv, err := lookup(ctx, s, websiteID, entry{kind: "identity"},
		func(st *site) (store.IdentityVerification, bool) {
			if st.identity == nil {
				return store.IdentityVerification{}, false
			}
			return *st.identity, true
		},
		func(ctx context.Context) (store.IdentityVerification, error) {
			return s.Base.IdentityVerification(ctx, websiteID)
		},
		func(st *site, iv store.IdentityVerification) { st.identity = &iv })
	if err != nil {
		return store.IdentityVerification{}, err
	}
	iv.Secrets = slices.Clone(iv.Secrets)
	return iv, nil
}
