package notification

import (
	"encoding/json"
	"testing"
)

// Every refusal of an audience, with its exact code and message, and the
// target each accepted one gives a send.
func TestAudienceCheck(t *testing.T) {
	const many = `audience is {"everyone": true} or exactly one of topicId, segmentId, filters`
	for _, c := range []struct{ in, msg string }{
		{`{}`, many},
		{`{"everyone": false}`, "everyone is true or left out: an audience never defaults to everyone"},
		{`{"everyone": true, "topicId": "news"}`, many},
		{`{"topicId": "news", "segmentId": "s"}`, many},
		{`{"segmentId": "s", "filters": {"rules": []}}`, many},
		{`{"topicId": ""}`, "topicId must not be empty"},
		{`{"segmentId": "  "}`, "segmentId must not be empty"},
		{`{"everyone": true, "excludeSegmentId": ""}`, "excludeSegmentId must not be empty"},
		{`{"excludeSegmentId": "s"}`, many},
		{`{"everyone": true}`, ""},
		{`{"topicId": "news", "excludeSegmentId": "s"}`, ""},
		{`{"filters": {"rules": []}, "excludeFilters": {"rules": []}}`, ""},
	} {
		var a Audience
		if err := json.Unmarshal([]byte(c.in), &a); err != nil {
			t.Fatal(err)
		}
		err := a.Check()
		if c.msg == "" {
			if err != nil {
				t.Fatalf("%s: %v", c.in, err)
			}
			continue
		}
		e, ok := err.(*Error)
		if !ok || e.Code != CodeInvalidAudience || e.Message != c.msg {
			t.Fatalf("%s: got %v, want invalid_audience: %s", c.in, err, c.msg)
		}
	}
}

func TestAudienceApply(t *testing.T) {
	var a Audience
	if err := json.Unmarshal([]byte(`{"topicId": "news", "excludeSegmentId": "s"}`), &a); err != nil {
		t.Fatal(err)
	}
	req := &Request{}
	a.Apply(req)
	if !req.TopicID.Valued() || req.TopicID.Value != "news" || !req.ExcludeSegmentID.Valued() || req.ExcludeSegmentID.Value != "s" ||
		req.SegmentID.Set || req.Filters.Set || req.ExcludeFilters.Set {
		t.Fatalf("request target %+v", req)
	}
	if topic, seg, ex := a.IDs(); topic != "news" || seg != "" || ex != "s" {
		t.Fatalf("IDs %q %q %q", topic, seg, ex)
	}
}
