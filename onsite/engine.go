package onsite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// EngineStore is what the welcome engine reads and writes.
type EngineStore interface {
	Website(ctx context.Context, id string) (store.Website, error)
	SiteSettings(ctx context.Context, websiteID, name string) ([]byte, error)
	FireWelcome(ctx context.Context, t store.Timer, w store.Welcome) (bool, error)
}

// Dispatcher publishes a stored send.
type Dispatcher interface {
	Dispatch(ctx context.Context, n store.Notification) error
}

// WelcomeEngine fires welcome timers (store.TimerWelcome): it is the
// handler the automations' claim loop calls for that kind, so the
// welcome's delay rides on the timers' leases.
type WelcomeEngine struct {
	st     EngineStore
	disp   Dispatcher
	tmpl   Templates
	logger *slog.Logger
}

// NewWelcomeEngine returns the welcome timers' handler; disp may be nil
// (the outbox sweep publishes every send), and so may tmpl (a welcome
// naming a template is then recorded without a send).
func NewWelcomeEngine(st EngineStore, disp Dispatcher, tmpl Templates, logger *slog.Logger) *WelcomeEngine {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &WelcomeEngine{st: st, disp: disp, tmpl: tmpl, logger: logger}
}

// FireTimer sends a claimed welcome timer's browser (its RunID, the
// endpoint's id) its welcome, once, to that browser alone:
// the send, the ledger row and the timer's removal commit together
// (store.Onsite.FireWelcome). A welcome turned off meanwhile is recorded
// without a send.
func (e *WelcomeEngine) FireTimer(ctx context.Context, t store.Timer, now time.Time) error {
	site, err := e.st.Website(ctx, t.WebsiteID)
	if err != nil {
		return fmt.Errorf("loading website of welcome timer %s: %w", t.RunID, err)
	}
	b, err := e.st.SiteSettings(ctx, t.WebsiteID, store.SettingsWelcome)
	if err != nil {
		return err
	}
	w, err := ReadWelcome(b)
	if err != nil {
		return err
	}
	fire := store.Welcome{At: now}
	if w.Enabled {
		// A welcome timer's run is its endpoint (queueWelcome): the
		// send goes to that browser alone.
		n, err := w.Notification(ctx, site, e.tmpl, t.RunID, now)
		var refused *notification.Error
		switch {
		case errors.Is(err, store.ErrNotFound) || errors.As(err, &refused):
			// Content that no longer sends (a template gone, content
			// refused): recorded without a send, so the timer does not
			// come back forever.
			e.logger.Warn("preparing a welcome; recorded without a send", "website_id", t.WebsiteID, "err", err)
		case err != nil:
			return err // passing (the store): the timer is claimed again
		default:
			fire.Notification = n
		}
	}
	sent, err := e.st.FireWelcome(ctx, t, fire)
	if err != nil || !sent {
		return err
	}
	if n := fire.Notification; n != nil && n.Status == store.StatusQueued && e.disp != nil {
		if err := e.disp.Dispatch(ctx, *n); err != nil {
			e.logger.Warn("dispatching a welcome; the outbox sweep will retry", "notification_id", n.ID, "err", err)
		}
	}
	return nil
}
