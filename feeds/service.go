package feeds

import (
	"context"
	"errors"
	"time"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// Service is what the API asks of feeds beside the store: a definition's
// checks against the website, and a poll now.
type Service struct {
	st     Store
	tpl    Templates
	poller *Poller
}

// NewService returns the service. tpl may be nil: a templateId is then
// refused (template_not_found). poller may be nil on a node that runs no
// poller: PollNow then polls with a poller of its own making.
func NewService(st Store, tpl Templates, poller *Poller) *Service {
	return &Service{st: st, tpl: tpl, poller: poller}
}

// sample is the item a definition is checked with.
var sample = Item{GUID: "sample", Title: "Sample title", Summary: "Sample summary",
	Link: "https://example.com/item", Image: "https://example.com/image.png"}

// Check checks d against website w: its templateId (through Templates),
// and its audience and template as a send of a sample item (the topic,
// segment and filters must exist and be valid). A refusal is *Error with
// a code of the API's catalog. A topic named by its slug is stored by its
// id, so that its deletion finds the feed.
func (s *Service) Check(ctx context.Context, d *Definition, w store.Website) error {
	if err := checkTemplate(ctx, *d, w.ID, s.tpl); err != nil {
		return err
	}
	req, err := Request(ctx, *d, w.ID, sample, s.tpl)
	if err != nil {
		return err
	}
	_, err = notification.Prepare(ctx, req, w, s.st, time.Now())
	var ne *notification.Error
	if errors.As(err, &ne) {
		return &Error{Code: ne.Code, Message: ne.Message}
	}
	if err != nil {
		return err
	}
	return audienceError(d.Audience.ResolveTopic(ctx, s.st, w.ID))
}

// PollNow polls one of the website's feeds now and returns the outcome:
// store.ErrNotFound for an unknown id, ErrPaused for a paused feed,
// ErrPollInProgress while another poll holds it.
func (s *Service) PollNow(ctx context.Context, websiteID, id string) (Outcome, error) {
	if s.poller == nil {
		return Outcome{}, errors.New("feeds: no poller on this node")
	}
	return s.poller.PollNow(ctx, websiteID, id)
}
