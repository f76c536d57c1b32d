package onsite

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// fireStore is the welcome engine's store: one website whose welcome names
// a template, and the welcomes fired.
type fireStore struct{ fired []store.Welcome }

func (*fireStore) Website(context.Context, string) (store.Website, error) {
	return store.Website{ID: "w1", Timezone: "UTC"}, nil
}

func (*fireStore) SiteSettings(context.Context, string, string) ([]byte, error) {
	return []byte(`{"enabled":true,"delaySeconds":0,"templateId":"0b2c6c0e-6d2a-4f55-9a1c-2f0c4c7f6e01"}`), nil
}

func (f *fireStore) FireWelcome(_ context.Context, _ store.Timer, w store.Welcome) (bool, error) {
	f.fired = append(f.fired, w)
	return true, nil
}

// applyErr is a Templates whose Apply fails with err.
type applyErr struct{ err error }

func (a applyErr) Apply(context.Context, string, string, *notification.Request) error { return a.err }

// A welcome whose content cannot send (its template gone) is recorded
// without a send, once; a passing failure (the store) records nothing, so
// the timer is claimed again and the browser still gets its welcome.
func TestWelcomeEngineFailures(t *testing.T) {
	ctx := context.Background()
	timer := store.Timer{RunID: "e1", WebsiteID: "w1", Kind: store.TimerWelcome}
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

	st := &fireStore{}
	gone := NewWelcomeEngine(st, nil, applyErr{fmt.Errorf("template: %w", store.ErrNotFound)}, nil)
	if err := gone.FireTimer(ctx, timer, now); err != nil || len(st.fired) != 1 || st.fired[0].Notification != nil {
		t.Fatalf("template gone: %v, fired %+v", err, st.fired)
	}

	st = &fireStore{}
	down := errors.New("connection reset")
	passing := NewWelcomeEngine(st, nil, applyErr{down}, nil)
	if err := passing.FireTimer(ctx, timer, now); !errors.Is(err, down) || len(st.fired) != 0 {
		t.Fatalf("store down: %v, fired %+v", err, st.fired)
	}
}
