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
	// Unreadable or unknown members fail closed, never everyone.
	f(`{"nextYearsMember":true}`, ErrUnreadableTarget, nil)
	f(`[1,2]`, ErrUnreadableTarget, nil)
	f(`{"segmentId":"gone"}`, ErrSegmentMissing, nil)
}
