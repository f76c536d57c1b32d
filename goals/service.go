package goals

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

// Store is what the Service reads and writes.
type Store interface {
	store.Goals
	LastInteraction(ctx context.Context, websiteID, subscriberID string, since time.Time) (notificationID string, clicked bool, err error)
	Person(ctx context.Context, websiteID, idOrExternalID string) (store.Person, error)
}

// Service records people's reaches of goals as their events arrive and
// their labels change. It runs on the API nodes, on the request's path.
type Service struct {
	st     Store
	logger *slog.Logger
}

// NewService returns a Service over st.
func NewService(st Store, logger *slog.Logger) *Service {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Service{st: st, logger: logger}
}

// Event records the person's reaches of the website's goals of the event
// name, each credited to the send the person last clicked, else last had
// delivered, within the goal's window before at; value is the event's
// (properties value or revenue, as conversions read it; 0 for none). The
// event's id makes each reach once. It returns the ids of the goals the
// event reaches (a redo of the event returns them again).
func (s *Service) Event(ctx context.Context, websiteID, subscriberID, eventID, name string, value float64, at time.Time) ([]string, error) {
	list, err := s.st.EventGoals(ctx, websiteID, name)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	reached := make([]string, 0, len(list))
	credits := map[int]string{} // window hours -> the send credited
	for _, g := range list {
		sent, ok := credits[g.WindowHours]
		if !ok {
			if sent, err = s.credited(ctx, websiteID, subscriberID, g, at); err != nil {
				return nil, err
			}
			credits[g.WindowHours] = sent
		}
		if _, err := s.st.ReachGoal(ctx, store.GoalReach{GoalID: g.ID, SubscriberID: subscriberID, Key: eventID,
			NotificationID: sent, Value: value, At: at}); err != nil {
			return nil, err
		}
		reached = append(reached, g.ID)
	}
	return reached, nil
}

// credited is the send a reach of g at at is credited to, "" for none.
func (s *Service) credited(ctx context.Context, websiteID, subscriberID string, g store.Goal, at time.Time) (string, error) {
	id, _, err := s.st.LastInteraction(ctx, websiteID, subscriberID, at.Add(-time.Duration(g.WindowHours)*time.Hour))
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("finding the send to credit: %w", err)
	}
	return id, nil
}

// TagsChanged evaluates the website's tag goals for a person whose labels
// just changed (named by subscriber or external id): each goal whose
// label value they have now, and did not have, is reached, credited as
// Event credits. It returns the ids of the goals reached.
func (s *Service) TagsChanged(ctx context.Context, websiteID, person string, at time.Time) ([]string, error) {
	list, err := s.st.TagGoals(ctx, websiteID)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	return s.tagsChanged(ctx, websiteID, list, person, at)
}

// PeopleTagsChanged is TagsChanged for each of people (an import, a
// bulk-tag), reading the website's tag goals once.
func (s *Service) PeopleTagsChanged(ctx context.Context, websiteID string, people []string, at time.Time) error {
	if len(people) == 0 {
		return nil
	}
	list, err := s.st.TagGoals(ctx, websiteID)
	if err != nil || len(list) == 0 {
		return err
	}
	for _, p := range people {
		if _, err := s.tagsChanged(ctx, websiteID, list, p, at); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) tagsChanged(ctx context.Context, websiteID string, list []store.Goal, key string, at time.Time) ([]string, error) {
	p, err := s.st.Person(ctx, websiteID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("finding the person: %w", err)
	}
	var reached []string
	for _, g := range list {
		value, ok := p.Tags[g.TagName]
		has := ok && value == g.TagValue
		r := store.GoalReach{GoalID: g.ID, SubscriberID: p.ID, Key: "tag:" + uuid.NewString(), At: at}
		if has {
			if r.NotificationID, err = s.credited(ctx, websiteID, p.ID, g, at); err != nil {
				return nil, err
			}
		}
		ok, err := s.st.ReachTagGoal(ctx, r, has)
		if err != nil {
			return nil, err
		}
		if ok {
			reached = append(reached, g.ID)
		}
	}
	return reached, nil
}
