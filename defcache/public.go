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
	b, err := lookup(ctx, s, websiteID, entry{"settings", name},
		func(st *site) ([]byte, bool) { b, hit := st.settings[name]; return b, hit },
		func(ctx context.Context) ([]byte, error) { return s.Base.SiteSettings(ctx, websiteID, name) },
		func(st *site, b []byte) {
			if st.settings == nil {
				st.settings = map[string][]byte{}
			}
			st.settings[name] = b
		})
	return slices.Clone(b), err
}

// ActiveOnsiteMessages answers from the website's active on-site messages,
// oldest first, read once (without their counts, which are not
// definitions). The messages are shared: the caller must not change them.
func (s *Store) ActiveOnsiteMessages(ctx context.Context, websiteID string) ([]OnsiteMessage, error) {
	return lookup(ctx, s, websiteID, entry{kind: "onsite"},
		func(st *site) ([]OnsiteMessage, bool) { return st.onsite, st.onsite != nil },
		func(ctx context.Context) ([]OnsiteMessage, error) {
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
			return list, nil
		},
		func(st *site, list []OnsiteMessage) { st.onsite = list })
}

// SegmentSelector answers from the website's segment compiled (the
// selector of a target naming it alone), compiled once;
// audience.ErrSegmentMissing when there is no such segment (kept as a nil
// selector). The selector is shared: the caller must not change it.
func (s *Store) SegmentSelector(ctx context.Context, websiteID, segmentID string) (*audience.Selector, error) {
	sel, err := lookup(ctx, s, websiteID, entry{"selector", segmentID},
		func(st *site) (*audience.Selector, bool) { sel, hit := st.selectors[segmentID]; return sel, hit },
		func(ctx context.Context) (*audience.Selector, error) {
			sel, err := audience.Compile(ctx, s.Base, websiteID, notification.Target{SegmentID: segmentID})
			if errors.Is(err, audience.ErrSegmentMissing) {
				return nil, nil
			}
			return sel, err
		},
		func(st *site, sel *audience.Selector) {
			if st.selectors == nil {
				st.selectors = map[string]*audience.Selector{}
			}
			if len(st.selectors) < maxEventNames {
				st.selectors[segmentID] = sel
			}
		})
	if err == nil && sel == nil {
		return nil, fmt.Errorf("%w: %s", audience.ErrSegmentMissing, segmentID)
	}
	return sel, err
}

// Topics answers from the website's topics, oldest first, read once
// (without their subscriber counts, which are not definitions).
func (s *Store) Topics(ctx context.Context, websiteID string) ([]store.Topic, error) {
	list, err := lookup(ctx, s, websiteID, entry{kind: "topics"},
		func(st *site) ([]store.Topic, bool) { return st.topics, st.topics != nil },
		func(ctx context.Context) ([]store.Topic, error) {
			list, err := nonNil(s.Base.ListTopics(ctx, websiteID))
			if err != nil {
				return nil, err
			}
			for i := range list {
				list[i].Subscribers = 0
			}
			return list, nil
		},
		func(st *site, list []store.Topic) { st.topics = list })
	if err != nil {
		return nil, err
	}
	return slices.Clone(list), nil
}
