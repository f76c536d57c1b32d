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
// (generations), so a purge is never undone by a slow reader.
//
// People caches the person refs of events the same way, behind the
// people version, read before every batch of lookups (see people.go).
package defcache

import (
	"context"
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
	v     versioned
	sites map[string]*site // guarded by v.mu
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
	s := &Store{Base: base, sites: map[string]*site{}}
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

// get returns the website's cached definitions (nil when not cached or the
// cache cannot be trusted) and the generation to fill at.
func (s *Store) get(ctx context.Context, websiteID string) (*site, uint64, bool) {
	gen, ok := s.v.fresh(ctx)
	if !ok {
		return nil, 0, false
	}
	s.v.mu.Lock()
	defer s.v.mu.Unlock()
	return s.sites[websiteID], gen, true
}

// put stores what fill sets on the website's entry, unless a purge came
// since gen.
func (s *Store) put(websiteID string, gen uint64, fill func(*site)) {
	s.v.fill(gen, func() {
		st := s.sites[websiteID]
		if st == nil {
			st = &site{}
			s.sites[websiteID] = st
		}
		fill(st)
	})
}

// ActiveAutomations answers from the website's active automations, read
// once.
func (s *Store) ActiveAutomations(ctx context.Context, websiteID string, triggerTypes ...string) ([]store.Automation, error) {
	st, gen, ok := s.get(ctx, websiteID)
	var all []store.Automation
	s.v.mu.Lock()
	if st != nil && st.automations != nil {
		all = st.automations
	}
	s.v.mu.Unlock()
	if all == nil {
		list, err := s.Base.ActiveAutomations(ctx, websiteID)
		if err != nil {
			return nil, err
		}
		if list == nil {
			list = []store.Automation{}
		}
		if ok {
			s.put(websiteID, gen, func(st *site) { st.automations = list })
		}
		all = list
	}
	out := make([]store.Automation, 0, len(all))
	for _, a := range all {
		if len(triggerTypes) == 0 || slices.Contains(triggerTypes, a.TriggerType) {
			out = append(out, a)
		}
	}
	return out, nil
}

// ActiveJourneys answers from the website's active journeys, read once.
func (s *Store) ActiveJourneys(ctx context.Context, websiteID string, entryTypes ...string) ([]store.Journey, error) {
	st, gen, ok := s.get(ctx, websiteID)
	var all []store.Journey
	s.v.mu.Lock()
	if st != nil && st.journeys != nil {
		all = st.journeys
	}
	s.v.mu.Unlock()
	if all == nil {
		list, err := s.Base.ActiveJourneys(ctx, websiteID)
		if err != nil {
			return nil, err
		}
		if list == nil {
			list = []store.Journey{}
		}
		if ok {
			s.put(websiteID, gen, func(st *site) { st.journeys = list })
		}
		all = list
	}
	out := make([]store.Journey, 0, len(all))
	for _, j := range all {
		if len(entryTypes) == 0 || slices.Contains(entryTypes, j.EntryType) {
			out = append(out, j)
		}
	}
	return out, nil
}

// HasJourneys reports whether the website has any journey, whatever its
// status: without one, nobody has an enrolment (journeys.Service skips
// reading a person's on their events).
func (s *Store) HasJourneys(ctx context.Context, websiteID string) (bool, error) {
	st, gen, ok := s.get(ctx, websiteID)
	s.v.mu.Lock()
	if st != nil && st.hasJourneys != nil {
		has := *st.hasJourneys
		s.v.mu.Unlock()
		return has, nil
	}
	s.v.mu.Unlock()
	has, err := s.Base.HasJourneys(ctx, websiteID)
	if err != nil {
		return false, err
	}
	if ok {
		s.put(websiteID, gen, func(st *site) { st.hasJourneys = &has })
	}
	return has, nil
}

// EventGoals answers from the website's goals of the event name, read
// once per name.
func (s *Store) EventGoals(ctx context.Context, websiteID, event string) ([]store.Goal, error) {
	st, gen, ok := s.get(ctx, websiteID)
	s.v.mu.Lock()
	if st != nil && st.eventGoals != nil {
		if list, hit := st.eventGoals[event]; hit {
			s.v.mu.Unlock()
			return slices.Clone(list), nil
		}
	}
	s.v.mu.Unlock()
	list, err := s.Base.EventGoals(ctx, websiteID, event)
	if err != nil {
		return nil, err
	}
	if ok {
		s.put(websiteID, gen, func(st *site) {
			if st.eventGoals == nil {
				st.eventGoals = map[string][]store.Goal{}
			}
			if len(st.eventGoals) < maxEventNames {
				st.eventGoals[event] = list
			}
		})
	}
	return slices.Clone(list), nil
}

// TagGoals answers from the website's tag goals, read once.
func (s *Store) TagGoals(ctx context.Context, websiteID string) ([]store.Goal, error) {
	st, gen, ok := s.get(ctx, websiteID)
	s.v.mu.Lock()
	if st != nil && st.tagGoals != nil {
		list := slices.Clone(st.tagGoals)
		s.v.mu.Unlock()
		return list, nil
	}
	s.v.mu.Unlock()
	list, err := s.Base.TagGoals(ctx, websiteID)
	if err != nil {
		return nil, err
	}
	if ok {
		if list == nil {
			list = []store.Goal{}
		}
		s.put(websiteID, gen, func(st *site) { st.tagGoals = list })
	}
	return slices.Clone(list), nil
}

// Segment answers from the website's segments, each read once; an
// unknown one is read each time.
func (s *Store) Segment(ctx context.Context, websiteID, id string) (store.Segment, error) {
	st, gen, ok := s.get(ctx, websiteID)
	s.v.mu.Lock()
	if st != nil && st.segments != nil {
		if seg, hit := st.segments[id]; hit {
			s.v.mu.Unlock()
			return seg, nil
		}
	}
	s.v.mu.Unlock()
	seg, err := s.Base.Segment(ctx, websiteID, id)
	if err != nil {
		return store.Segment{}, err
	}
	if ok {
		s.put(websiteID, gen, func(st *site) {
			if st.segments == nil {
				st.segments = map[string]store.Segment{}
			}
			if len(st.segments) < maxEventNames {
				st.segments[id] = seg
			}
		})
	}
	return seg, nil
}

// IdentityVerification answers from the website's identity verification,
// read once.
func (s *Store) IdentityVerification(ctx context.Context, websiteID string) (store.IdentityVerification, error) {
	st, gen, ok := s.get(ctx, websiteID)
	s.v.mu.Lock()
	if st != nil && st.identity != nil {
		iv := *st.identity
		s.v.mu.Unlock()
		iv.Secrets = slices.Clone(iv.Secrets)
		return iv, nil
	}
	s.v.mu.Unlock()
	iv, err := s.Base.IdentityVerification(ctx, websiteID)
	if err != nil {
		return store.IdentityVerification{}, err
	}
	if ok {
		kept := iv
		kept.Secrets = slices.Clone(iv.Secrets)
		s.put(websiteID, gen, func(st *site) { st.identity = &kept })
	}
	return iv, nil
}
