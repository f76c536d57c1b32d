package automations

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/relaybell/relaybell/audience"
	"github.com/relaybell/relaybell/filter"
	"github.com/relaybell/relaybell/store"
)

// SegmentStore is what segment entry reads and writes: the people, the
// segments and who was last found in each watcher's segment.
type SegmentStore interface {
	audience.Reader
	store.SegmentMembers
	Segment(ctx context.Context, websiteID, id string) (store.Segment, error)
	Person(ctx context.Context, websiteID, idOrExternalID string) (store.Person, error)
}

// Watch is one watcher of a segment: an active segment_entered automation
// or journey.
type Watch struct {
	// ID is the automation's or the journey's id: it keys the watcher's
	// membership rows (store.SegmentMembers).
	ID        string
	SegmentID string
	// Enter starts what entering the segment starts for the person (a
	// run, an enrolment) and reports whether it did.
	Enter func(ctx context.Context, subscriberID string, at time.Time) (bool, error)
}

// Watchers lists a website's active watchers of one kind: the
// automations' Service for automations, the journeys' for journeys.
type Watchers interface {
	SegmentWatches(ctx context.Context, websiteID string) ([]Watch, error)
}

// Segments evaluates segment entry (the segment_entered trigger) for every
// kind of watcher in one pass: each person who changed is read once and
// checked against the segment of each watcher of the website, whose
// membership rows say whether they were in it already. It runs on the API
// nodes, on the path of the request that changed people, and on the
// engine's, after a journey's set_tags step.
type Segments struct {
	st     SegmentStore
	kinds  []Watchers
	logger *slog.Logger
}

// NewSegments returns the evaluation of the watchers of kinds over st.
func NewSegments(st SegmentStore, logger *slog.Logger, kinds ...Watchers) *Segments {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Segments{st: st, kinds: kinds, logger: logger}
}

// selector compiles a watched segment; nil when the segment is gone (a
// watcher of a deleted segment enters nobody).
func selector(ctx context.Context, st SegmentStore, websiteID, segmentID string) (*audience.Selector, error) {
	seg, err := st.Segment(ctx, websiteID, segmentID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := filter.Parse(seg.Filters)
	if err != nil {
		return nil, fmt.Errorf("segment %s filters: %w", segmentID, err)
	}
	return audience.ForFilters(websiteID, "", &f), nil
}

// PeopleChanged evaluates the website's watchers for people whose
// attributes just changed (a browser subscribed, labels set, an import,
// a journey's set_tags), each named by subscriber or external id: a
// subscribed person now in a watcher's segment who was not enters it
// (Watch.Enter); one no longer in it is recorded out, and may enter
// again. It returns how many entries started something.
func (s *Segments) PeopleChanged(ctx context.Context, websiteID string, people []string, at time.Time) (int, error) {
	if len(people) == 0 {
		return 0, nil
	}
	var watches []Watch
	for _, k := range s.kinds {
		list, err := k.SegmentWatches(ctx, websiteID)
		if err != nil {
			return 0, err
		}
		watches = append(watches, list...)
	}
	if len(watches) == 0 {
		return 0, nil
	}
	selectors := map[string]*audience.Selector{} // segment id -> compiled (nil: gone)
	for _, w := range watches {
		if _, ok := selectors[w.SegmentID]; ok {
			continue
		}
		sel, err := selector(ctx, s.st, websiteID, w.SegmentID)
		if err != nil {
			return 0, err
		}
		selectors[w.SegmentID] = sel
	}
	started := 0
	for _, key := range people {
		p, err := s.st.Person(ctx, websiteID, key)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return started, err
		}
		for _, w := range watches {
			sel := selectors[w.SegmentID]
			if sel == nil {
				continue
			}
			in := p.Status() == "subscribed" && sel.Selects(&p.Subscriber)
			entered, err := s.st.SetSegmentMember(ctx, w.ID, p.ID, in)
			if err != nil {
				return started, err
			}
			if !entered {
				continue
			}
			ok, err := w.Enter(ctx, p.ID, at)
			if err != nil {
				return started, fmt.Errorf("entering %s for segment %s: %w", w.ID, w.SegmentID, err)
			}
			if ok {
				started++
			}
		}
	}
	return started, nil
}

// SeedSegment records who is in the segment now, when watcherID starts
// watching it (created, its segment changed, or made active again): they
// are in it already and do not enter. It is the one read of the
// website's people the trigger makes; after it, people are evaluated as
// they change (Segments.PeopleChanged).
func SeedSegment(ctx context.Context, st SegmentStore, websiteID, watcherID, segmentID string) error {
	sel, err := selector(ctx, st, websiteID, segmentID)
	if err != nil || sel == nil {
		return err
	}
	var members []string
	err = st.Reachable(ctx, store.ReachQuery{WebsiteID: websiteID, Shard: store.AllShards, Tags: true}, func(sub *store.Subscriber, _ int) {
		if sel.Selects(sub) {
			members = append(members, sub.ID)
		}
	})
	if err != nil {
		return fmt.Errorf("reading the segment's people: %w", err)
	}
	return st.SeedSegmentMembers(ctx, watcherID, members)
}

// StartsWatching reports whether a change of a watcher's trigger (an
// automation's, a journey's entry) from was to now, and of its status,
// makes it start watching a segment afresh, so that it must be seeded
// (SeedSegment): its segment changed, or it became active again (people
// who came into the segment while it was not active do not enter).
func StartsWatching(was, now Trigger, wasActive, active bool) bool {
	if now.Type != TriggerSegmentEntered {
		return false
	}
	return was.Type != now.Type || was.SegmentID != now.SegmentID || !wasActive && active
}
