package analytics

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestCheckBehaviors(t *testing.T) {
	ok := Behavior{ID: "b1", WebsiteID: "w", Name: "purchase", Properties: json.RawMessage(`{"value":12.5}`),
		Source: "server", At: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	f := func(what string, edit func(b *Behavior), wantErr string) {
		t.Helper()
		b := ok
		edit(&b)
		err := CheckBehaviors([]Behavior{ok, b})
		if wantErr == "" {
			if err != nil {
				t.Errorf("%s: %v", what, err)
			}
			return
		}
		if err == nil || !strings.Contains(err.Error(), wantErr) || !strings.HasPrefix(err.Error(), "behavior 1: ") {
			t.Errorf("%s: error %v, want one about behavior 1 containing %q", what, err, wantErr)
		}
	}
	f("as is", func(*Behavior) {}, "")
	f("no properties", func(b *Behavior) { b.Properties = nil }, "")
	f("empty properties", func(b *Behavior) { b.Properties = json.RawMessage{} }, "")
	f("spaces around", func(b *Behavior) { b.Properties = json.RawMessage(" \n{\"a\":[1,{}]}\t") }, "")
	f("120 characters", func(b *Behavior) { b.Name = strings.Repeat("é", MaxBehaviorName) }, "")
	f("at 1970", func(b *Behavior) { b.At = time.Unix(0, 0) }, "")
	f("a negative value", func(b *Behavior) { b.Value = -3.25 }, "")
	largest := func(extra int) func(b *Behavior) {
		return func(b *Behavior) {
			b.Properties = nil
			b.Properties = json.RawMessage(`{"p":"` + strings.Repeat("x", MaxBehaviorBytes-b.textBytes()-8+extra) + `"}`)
		}
	}
	f("the largest", largest(0), "")

	f("no id", func(b *Behavior) { b.ID = "" }, "id and a website are required")
	f("no website", func(b *Behavior) { b.WebsiteID = "" }, "id and a website are required")
	f("121 characters", func(b *Behavior) { b.Name = strings.Repeat("é", MaxBehaviorName+1) }, "name longer than 120")
	f("before 1970", func(b *Behavior) { b.At = time.Unix(-1, 0) }, "cannot be stored")
	f("zero time", func(b *Behavior) { b.At = time.Time{} }, "cannot be stored")
	f("after 2105", func(b *Behavior) { b.At = time.Date(2106, 1, 1, 0, 0, 0, 0, time.UTC) }, "cannot be stored")
	f("NaN", func(b *Behavior) { b.Value = math.NaN() }, "value NaN")
	f("infinite", func(b *Behavior) { b.Value = math.Inf(-1) }, "value -Inf")
	for _, p := range []string{`[]`, `"x"`, `1`, `null`, `{`, `{"a":1}x`, `{"a":1}{}`, " ", "{\"a\":\"\xff\"}"} {
		f("properties "+p, func(b *Behavior) { b.Properties = json.RawMessage(p) }, "not a JSON object")
	}
	f("a byte too large", largest(1), "at most 990000")
	big := ok
	largest(1)(&big)
	if err := CheckBehaviors([]Behavior{big}); !errors.Is(err, ErrBehaviorTooLarge) {
		t.Errorf("a behavior over MaxBehaviorBytes: %v, want ErrBehaviorTooLarge", err)
	}
	if err := CheckBehaviors(nil); err != nil {
		t.Errorf("no behaviors: %v", err)
	}
}

func TestBehaviorQuery(t *testing.T) {
	for _, limit := range []int{-1, 0, MaxBehaviorLimit + 1} {
		if err := (&BehaviorQuery{WebsiteID: "w", Limit: limit}).Check(); err == nil {
			t.Errorf("limit %d: no error", limit)
		}
	}
	for _, limit := range []int{1, MaxBehaviorLimit} {
		if err := (&BehaviorQuery{WebsiteID: "w", Limit: limit}).Check(); err != nil {
			t.Errorf("limit %d: %v", limit, err)
		}
	}
	f := func(q BehaviorQuery, wantIDs []string, wantByPerson bool) {
		t.Helper()
		ids, byPerson := q.Subscribers()
		if strings.Join(ids, ",") != strings.Join(wantIDs, ",") || byPerson != wantByPerson {
			t.Errorf("%+v: %q %v, want %q %v", q, ids, byPerson, wantIDs, wantByPerson)
		}
	}
	f(BehaviorQuery{}, nil, false)
	f(BehaviorQuery{ExternalID: "u"}, nil, true)
	f(BehaviorQuery{SubscriberIDs: []string{"s1", "", "s2"}}, []string{"s1", "s2"}, true)
	f(BehaviorQuery{SubscriberIDs: []string{""}}, nil, true) // names nobody: finds nothing, not the website's latest
}
