package events

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/automations/enginetest"
	"github.com/relaybell/relaybell/store"
)

// heldInterests holds each WriteEvents until the event's own write has
// begun, and then fails it with err when set.
type heldInterests struct {
	store.Store
	logged <-chan struct{}
	err    error
}

func (h *heldInterests) WriteEvents(ctx context.Context, w store.EventWrites) (map[string]map[string]store.Interaction, error) {
	select {
	case <-h.logged:
	case <-time.After(10 * time.Second):
		return nil, errors.New("the event's write never began while its interest was written")
	}
	if h.err != nil {
		return nil, h.err
	}
	return h.Store.WriteEvents(ctx, w)
}

// signalLog keeps the behaviors recorded and closes logged at its first
// write.
type signalLog struct {
	once      sync.Once
	logged    chan struct{}
	mu        sync.Mutex
	behaviors []analytics.Behavior
}

func (l *signalLog) RecordBehaviors(_ context.Context, bs []analytics.Behavior) error {
	l.once.Do(func() { close(l.logged) })
	l.mu.Lock()
	defer l.mu.Unlock()
	l.behaviors = append(l.behaviors, bs...)
	return nil
}

// TestTrackWritesTheInterestBesideTheEvent: an event's product interest
// is written while the rest of the event is done, its own write included
// (the store below holds the interest until that write began), and the
// answer waits for it: once Track returns the interest is stored, and an
// interest that fails fails Track, though the event may be logged (its
// retry with the same id is the same event).
func TestTrackWritesTheInterestBesideTheEvent(t *testing.T) {
	ctx := context.Background()
	st := enginetest.OpenSQLite(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	w := newShop(t, st)
	res := subscribeAnn(t, st, w, now)
	for _, fail := range []bool{false, true} {
		log := &signalLog{logged: make(chan struct{})}
		h := &heldInterests{Store: st, logged: log.logged}
		if fail {
			h.err = errors.New("disk full")
		}
		svc := New(h, log, nil, nil, Config{})
		product := "sku-ok"
		if fail {
			product = "sku-failed"
		}
		ans, err := svc.Track(ctx, Input{ID: uuid.NewString(), Website: w, Name: "product.viewed", ExternalID: "ann", Addressed: true,
			Properties: []byte(`{"productId": "` + product + `"}`), Source: SourceServer, At: now})
		got, ierr := st.Interests(ctx, w.ID, []string{res.SubscriberID}, now.Add(-time.Hour), 10)
		if ierr != nil {
			t.Fatal(ierr)
		}
		if fail {
			if !errors.Is(err, h.err) || ans.OK {
				t.Fatalf("Track with its interest failing: %+v, %v; want the interest's error", ans, err)
			}
			if len(got) != 1 || got[0].ProductID != "sku-ok" {
				t.Fatalf("interests %+v, want only the first event's", got)
			}
			continue
		}
		if err != nil || !ans.OK || ans.SubscriberID == nil || *ans.SubscriberID != res.SubscriberID {
			t.Fatalf("Track: %+v, %v", ans, err)
		}
		if len(got) != 1 || got[0].ProductID != "sku-ok" || got[0].Kind != store.InterestPriceDrop {
			t.Fatalf("interests once Track returned: %+v", got)
		}
		if len(log.behaviors) != 1 || log.behaviors[0].ID != ans.EventID {
			t.Fatalf("events logged %+v, want %s", log.behaviors, ans.EventID)
		}
	}
}
