package defcache

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/relaybell/relaybell/audience"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/onsite"
	"github.com/relaybell/relaybell/store"
)

// PublicBase is what the cache reads for the browser SDK's public routes:
// a website's settings documents, on-site messages and topics. Their
// writers move the definitions version in the transaction of their change
// (store/sqlstore).
type PublicBase interface {
	SiteSettings(ctx context.Context, websiteID, name string) ([]byte, error)
	ListOnsiteMessages(ctx context.Context, websiteID string) ([]store.OnsiteMessage, error)
	ListTopics(ctx context.Context, websiteID string) ([]store.Topic, error)
}

// OnsiteMessage is one of a website's active on-site messages, its
// definition read.
type OnsiteMessage struct {
	ID string
	onsite.Message
}

// SiteSettings answers from the website's settings document of name
// (store.SettingsPrompt, store.SettingsWelcome), read once; nil when it
// was never set.
func (s *Store) SiteSettings(ctx context.Context, websiteID, name string) ([]byte, error) {
	st, gen, ok := s.get(ctx, websiteID)
	s.v.mu.Lock()
	if st != nil && st.settings != nil {
		if b, hit := st.settings[name]; hit {
			s.v.mu.Unlock()
			return slices.Clone(b), nil
		}
	}
	s.v.mu.Unlock()
	b, err := s.Base.SiteSettings(ctx, websiteID, name)
	if err != nil {
		return nil, err
	}
	if ok {
		kept := slices.Clone(b)
		s.put(websiteID, gen, func(st *site) {
			if st.settings == nil {
				st.settings = map[string][]byte{}
			}
			st.settings[name] = kept
		})
	}
	return b, nil
}

// ActiveOnsiteMessages answers from the website's active on-site messages,
// oldest first, read once (without their counts, which are not
// definitions). The messages are shared: the caller must not change them.
func (s *Store) ActiveOnsiteMessages(ctx context.Context, websiteID string) ([]OnsiteMessage, error) {
	st, gen, ok := s.get(ctx, websiteID)
	s.v.mu.Lock()
	if st != nil && st.onsite != nil {
		list := st.onsite
		s.v.mu.Unlock()
		return list, nil
	}
	s.v.mu.Unlock()
	stored, err := s.Base.ListOnsiteMessages(ctx, websiteID)
	if err != nil {
		return nil, err
	}
	list := []OnsiteMessage{}
	for _, m := range slices.Backward(stored) { // newest first
		d, err := onsite.ReadMessage(m.Definition)
		if err != nil {
			return nil, err
		}
		if d.Status == onsite.StatusActive {
			list = append(list, OnsiteMessage{ID: m.ID, Message: d})
		}
	}
	if ok {
		s.put(websiteID, gen, func(st *site) { st.onsite = list })
	}
	return list, nil
}

// SegmentSelector answers from the website's segment compiled (the
// selector of a target naming it alone), compiled once;
// audience.ErrSegmentMissing when there is no such segment. The selector
// is shared: the caller must not change it.
func (s *Store) SegmentSelector(ctx context.Context, websiteID, segmentID string) (*audience.Selector, error) {
	st, gen, ok := s.get(ctx, websiteID)
	s.v.mu.Lock()
	if st != nil && st.selectors != nil {
		if sel, hit := st.selectors[segmentID]; hit {
			s.v.mu.Unlock()
			if sel == nil {
				return nil, fmt.Errorf("%w: %s", audience.ErrSegmentMissing, segmentID)
			}
			return sel, nil
		}
	}
	s.v.mu.Unlock()
	sel, err := audience.Compile(ctx, s.Base, websiteID, notification.Target{SegmentID: segmentID})
	if err != nil && !errors.Is(err, audience.ErrSegmentMissing) {
		return nil, err
	}
	if ok {
		s.put(websiteID, gen, func(st *site) {
			if st.selectors == nil {
				st.selectors = map[string]*audience.Selector{}
			}
			if len(st.selectors) < maxEventNames {
				st.selectors[segmentID] = sel
			}
		})
	}
	if sel == nil {
		return nil, err
	}
	return sel, nil
}

// Topics answers from the website's topics, oldest first, read once
// (without their subscriber counts, which are not definitions).
func (s *Store) Topics(ctx context.Context, websiteID string) ([]store.Topic, error) {
	st, gen, ok := s.get(ctx, websiteID)
	s.v.mu.Lock()
	if st != nil && st.topics != nil {
		list := slices.Clone(st.topics)
		s.v.mu.Unlock()
		return list, nil
	}
	s.v.mu.Unlock()
	list, err := s.Base.ListTopics(ctx, websiteID)
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []store.Topic{}
	}
	for i := range list {
		list[i].Subscribers = 0
	}
	if ok {
		kept := slices.Clone(list)
		s.put(websiteID, gen, func(st *site) { st.topics = kept })
	}
	return list, nil
}
