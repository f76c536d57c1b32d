package audience

import (
	"context"
	"errors"
	"testing"

	"github.com/relaybell/relaybell/store"
)

type noSegments struct{}

func (noSegments) Segment(context.Context, string, string) (store.Segment, error) {
	return store.Segment{}, store.ErrNotFound
}

func TestCompileStored(t *testing.T) {
	ctx := t.Context()
	f := func(raw string, wantErr error, check func(*Selector) bool) {
		t.Helper()
		var target []byte
		if raw != "" {
			target = []byte(raw)
		}
		sel, err := CompileStored(ctx, noSegments{}, "w1", target)
		if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
			t.Fatalf("CompileStored(%q) error = %v, want %v", raw, err, wantErr)
		}
		if err == nil && !check(sel) {
			t.Fatalf("CompileStored(%q) = %+v", raw, sel)
		}
	}
	everyone := func(s *Selector) bool {
		return s.WebsiteID == "w1" && s.ExternalIDs == nil && s.TopicID == "" && s.AlertID == "" && !s.TestDevices &&
			len(s.include) == 0 && len(s.exclude) == 0
	}
	f("", nil, everyone)
	f("null", nil, everyone)
	f(`{"externalIds":["a","b"]}`, nil, func(s *Selector) bool { return len(s.ExternalIDs) == 2 && s.TopicID == "" })
	f(`{"topicId":"t1"}`, nil, func(s *Selector) bool { return s.TopicID == "t1" && s.ExternalIDs == nil })
	// One browser (a welcome): that endpoint in the store's query, and
	// nobody else may be named with it.
	f(`{"endpointId":"e1"}`, nil, func(s *Selector) bool {
		q := s.Query(3, "", 10)
		return s.EndpointID == "e1" && q.EndpointID == "e1" && q.SubscriberID == "" && q.ExternalIDs == nil &&
			s.reach(3, false).EndpointID == "e1"
	})
	f(`{"endpointId":"e1","subscriberId":"s1"}`, ErrUnreadableTarget, nil)
	f(`{"endpointId":"e1","externalIds":["a"]}`, ErrUnreadableTarget, nil)
	f(`{"endpointId":"e1","testDevices":true}`, ErrUnreadableTarget, nil)
	f(`{"endpointId":"e1","productAlert":{"id":"n1","kind":"price_drop","productId":"p"}}`, ErrUnreadableTarget, nil)
	// Unreadable or unknown members fail closed, never everyone.
	f(`{"nextYearsMember":true}`, ErrUnreadableTarget, nil)
	f(`[1,2]`, ErrUnreadableTarget, nil)
	f(`{"segmentId":"gone"}`, ErrSegmentMissing, nil)
}
