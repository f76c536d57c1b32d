package filter

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func TestRequirements(t *testing.T) {
	f := func(match string, rules []Rule, want []Requirement) {
		t.Helper()
		if got := Compile(Filters{Mode: match, Rules: rules}).Requirements(); !reflect.DeepEqual(got, want) {
			t.Errorf("Requirements(%s %+v) = %+v, want %+v", match, rules, got, want)
		}
	}
	country := Rule{Field: "Country", Value: List("FR", "DE", "FR", "")}
	plan := Rule{Field: "tag:plan", Value: Text("pro")}
	f("", nil, nil) // matches everyone
	f("", []Rule{country, plan}, []Requirement{{Values: []string{"FR", "DE"}}, {Tag: "plan", Values: []string{"pro"}}})
	f("all", []Rule{{Field: "tag:beta", Op: OpExists}, {Field: "language", Value: Text("fr")}, {Field: "tag:plan", Op: OpNeq, Value: Text("free")}},
		[]Requirement{{Tag: "beta"}})
	f("any", []Rule{country, plan}, nil)
	f("any", []Rule{plan}, []Requirement{{Tag: "plan", Values: []string{"pro"}}})
	f("all", []Rule{plan, {Field: "tag:plan", Op: OpContains, Value: Text("p")}, {Field: "url", Op: OpIn, Value: List("x")}},
		[]Requirement{{Tag: "plan", Values: []string{"pro"}}})
	f("all", []Rule{plan, {Field: "nope", Value: Text("x")}}, nil) // matches nobody
	f("all", []Rule{{Field: "country", Op: OpNotExists}}, nil)
}

// TestRequirementsHold: for random filters and subscribers, whoever Match
// accepts meets every requirement, which is what lets a store skip the
// others before Match.
func TestRequirementsHold(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	fields := []string{"country", "COUNTRY", "language", "url", "external_id", "tag:plan", "tag:beta", "tag:Plan"}
	ops := []string{"", OpEq, OpNeq, OpIn, OpContains, OpExists, OpNotExists, "odd"}
	words := []string{"", "FR", "fr", "DE", "pro", "free", "x"}
	value := func() Value {
		if r.IntN(2) == 0 {
			return Text(pick(words...))
		}
		return List(pick(words...), pick(words...))
	}
	var people []Attributes
	for _, country := range []string{"", "FR", "DE", "fr"} {
		for _, tags := range []map[string]string{nil, {"plan": "pro"}, {"plan": "free", "beta": ""}, {"Plan": "pro", "beta": "x"}} {
			people = append(people, Attributes{Country: country, Language: pick(words...), URL: pick(words...), ExternalID: pick(words...), Tags: tags})
		}
	}
	meets := func(a Attributes, q Requirement) bool {
		if q.Tag == "" {
			return slices.Contains(q.Values, a.Country)
		}
		v, ok := a.Tags[q.Tag]
		return ok && (q.Values == nil || slices.Contains(q.Values, v))
	}
	implied := 0
	for range 20000 {
		fs := Filters{Mode: pick("", MatchAll, MatchAny)}
		for range 1 + r.IntN(3) {
			fs.Rules = append(fs.Rules, Rule{Field: pick(fields...), Op: pick(ops...), Value: value()})
		}
		m := Compile(fs)
		reqs := m.Requirements()
		implied += len(reqs)
		for _, a := range people {
			if !m.Match(a) {
				continue
			}
			for _, q := range reqs {
				if !meets(a, q) {
					t.Fatalf("%+v matches %+v but not its requirement %+v", a, fs, q)
				}
			}
		}
	}
	if implied == 0 {
		t.Fatal("no filter gave a requirement")
	}
}

func TestUsesTags(t *testing.T) {
	for _, c := range []struct {
		rules []Rule
		want  bool
	}{
		{nil, false},
		{[]Rule{{Field: "country", Value: Text("FR")}}, false},
		{[]Rule{{Field: "country", Value: Text("FR")}, {Field: "tag:plan", Op: OpExists}}, true},
		{[]Rule{{Field: "tag:plan", Value: Text("")}}, false}, // incomplete: matches nobody
	} {
		if got := Compile(Filters{Rules: c.rules}).UsesTags(); got != c.want {
			t.Errorf("UsesTags(%+v) = %v, want %v", c.rules, got, c.want)
		}
	}
}
