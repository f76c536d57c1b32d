package filter

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func rule(field, op string, v Value) Rule { return Rule{Field: field, Op: op, Value: v} }

// subscriber is the attributes most cases run against.
var subscriber = Attributes{
	Country:    "US",
	Language:   "en-US",
	URL:        "https://shop.example.com/Pricing?plan=Pro",
	ExternalID: "user-42",
	Tags:       map[string]string{"plan": "pro", "vip": "", "Team": "Red"},
}

// checkMatch asserts Filters.Match, and that Compile, Normalize and a JSON
// round trip all give the same answer.
func checkMatch(t *testing.T, fs Filters, a Attributes, want bool) {
	t.Helper()
	if got := fs.Match(a); got != want {
		t.Fatalf("Match(%+v) on %+v = %v, want %v", fs, a, got, want)
	}
	if got := Compile(fs).Match(a); got != want {
		t.Fatalf("Compile(%+v).Match(%+v) = %v, want %v", fs, a, got, want)
	}
	if got := fs.Normalize().Match(a); got != want {
		t.Fatalf("Normalize(%+v).Match(%+v) = %v, want %v", fs, a, got, want)
	}
	raw, err := json.Marshal(fs)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	back, err := Parse(raw)
	if err != nil {
		t.Fatalf("Parse(%s): %v", raw, err)
	}
	if got := back.Match(a); got != want {
		t.Fatalf("round trip %s: Match = %v, want %v", raw, got, want)
	}
}

func TestRule(t *testing.T) {
	f := func(r Rule, a Attributes, want bool) {
		t.Helper()
		checkMatch(t, Filters{Rules: []Rule{r}}, a, want)
	}
	none := Attributes{}

	// country: eq/neq/in are case-sensitive.
	f(rule("country", "eq", Text("US")), subscriber, true)
	f(rule("country", "", Text("US")), subscriber, true) // eq is the default
	f(rule("country", "eq", Text("us")), subscriber, false)
	f(rule("country", "eq", Text("DE")), subscriber, false)
	f(rule("country", "eq", Text("US")), none, false)
	f(rule("country", "neq", Text("DE")), subscriber, true)
	f(rule("country", "neq", Text("US")), subscriber, false)
	f(rule("country", "neq", Text("us")), subscriber, true)
	f(rule("country", "neq", Text("US")), none, true) // empty differs from a value
	f(rule("country", "in", List("DE", "US")), subscriber, true)
	f(rule("country", "in", List("DE", "FR")), subscriber, false)
	f(rule("country", "in", List("de", "us")), subscriber, false)
	f(rule("country", "in", Text("US")), subscriber, true) // scalar is a one-element list
	f(rule("country", "in", List()), subscriber, false)
	f(rule("country", "in", List("US")), none, false)
	f(rule("country", "contains", Text("u")), subscriber, true)
	f(rule("country", "exists", Value{}), subscriber, true)
	f(rule("country", "exists", Value{}), none, false)
	f(rule("country", "not_exists", Value{}), subscriber, false)
	f(rule("country", "not_exists", Value{}), none, true)
	f(rule("country", "exists", Text("ignored")), subscriber, true)

	// eq with a list behaves as in; neq with a list means equal to none.
	f(rule("country", "eq", List("DE", "US")), subscriber, true)
	f(rule("country", "eq", List("DE", "FR")), subscriber, false)
	f(rule("country", "neq", List("DE", "FR")), subscriber, true)
	f(rule("country", "neq", List("DE", "US")), subscriber, false)
	f(rule("country", "neq", List("DE", "US")), none, true)

	// language: compared as stored, no prefix matching.
	f(rule("language", "eq", Text("en-US")), subscriber, true)
	f(rule("language", "eq", Text("en")), subscriber, false)
	f(rule("language", "eq", Text("en-us")), subscriber, false)
	f(rule("language", "contains", Text("EN")), subscriber, true)
	f(rule("language", "in", List("en", "en-GB")), subscriber, false)
	f(rule("language", "neq", Text("en")), subscriber, true)

	// url: contains is a case-insensitive substring test.
	f(rule("url", "contains", Text("pricing")), subscriber, true)
	f(rule("url", "contains", Text("PRICING")), subscriber, true)
	f(rule("url", "contains", Text("plan=pro")), subscriber, true)
	f(rule("url", "contains", Text("checkout")), subscriber, false)
	f(rule("url", "contains", List("checkout", "PRICING")), subscriber, true) // any element
	f(rule("url", "contains", List("checkout", "cart")), subscriber, false)
	f(rule("url", "contains", Text("pricing")), none, false)
	f(rule("url", "eq", Text("https://shop.example.com/pricing?plan=Pro")), subscriber, false)
	f(rule("url", "eq", Text(subscriber.URL)), subscriber, true)
	f(rule("url", "exists", Value{}), subscriber, true)

	// external_id and its alias.
	f(rule("external_id", "eq", Text("user-42")), subscriber, true)
	f(rule("externalId", "eq", Text("user-42")), subscriber, true)
	f(rule("external_id", "eq", Text("USER-42")), subscriber, false)
	f(rule("externalId", "in", List("a", "user-42")), subscriber, true)
	f(rule("external_id", "not_exists", Value{}), subscriber, false)
	f(rule("externalId", "not_exists", Value{}), none, true)
	f(rule("external_id", "neq", Text("user-42")), none, true)

	// tags.
	f(rule("tag:plan", "eq", Text("pro")), subscriber, true)
	f(rule("tag:plan", "eq", Text("Pro")), subscriber, false)
	f(rule("tag:plan", "eq", Text("pro")), none, false)
	f(rule("tag:plan", "in", List("free", "pro")), subscriber, true)
	f(rule("tag:plan", "contains", Text("PR")), subscriber, true)
	f(rule("tag:plan", "contains", Text("x")), none, false)
	f(rule("tag:plan", "neq", Text("free")), subscriber, true)
	f(rule("tag:plan", "neq", Text("pro")), subscriber, false)
	f(rule("tag:plan", "neq", Text("pro")), none, true) // no tag: neq matches
	f(rule("tag:plan", "neq", List("pro", "free")), none, true)
	f(rule("tag:missing", "neq", Text("x")), subscriber, true)
	f(rule("tag:plan", "exists", Value{}), subscriber, true)
	f(rule("tag:vip", "exists", Value{}), subscriber, true) // present with an empty value
	f(rule("tag:vip", "not_exists", Value{}), subscriber, false)
	f(rule("tag:vip", "eq", Text("x")), subscriber, false)
	f(rule("tag:vip", "neq", Text("x")), subscriber, true)
	f(rule("tag:plan", "not_exists", Value{}), none, true)
	f(rule("tag:missing", "exists", Value{}), subscriber, false)
	f(rule("tag:team", "exists", Value{}), subscriber, false) // keys are exact
	f(rule("tag:Team", "eq", Text("Red")), subscriber, true)
	f(rule("tag:Team", "eq", Text("red")), subscriber, false)
	f(rule("tag:a:b", "eq", Text("c")), Attributes{Tags: map[string]string{"a:b": "c"}}, true)

	// tag: with an empty key matches nobody, for every op.
	for _, op := range []string{"eq", "neq", "contains", "in", "exists", "not_exists"} {
		f(rule("tag:", op, Text("pro")), subscriber, false)
		f(rule("tag:", op, Text("pro")), Attributes{Tags: map[string]string{"": "pro"}}, false)
		f(rule("tag:", op, Text("pro")), none, false)
	}

	// An unknown field matches nobody, for every op.
	for _, op := range []string{"", "eq", "neq", "contains", "in", "exists", "not_exists", "bogus"} {
		f(rule("browser", op, Text("Chrome")), subscriber, false)
		f(rule("browser", op, Text("Chrome")), none, false)
		f(rule("", op, Text("US")), subscriber, false)
		f(rule("tags", op, Text("pro")), subscriber, false)
	}

	// An unknown op is eq.
	f(rule("country", "bogus", Text("US")), subscriber, true)
	f(rule("country", "bogus", Text("DE")), subscriber, false)
	f(rule("country", "gt", List("DE", "US")), subscriber, true)

	// Keywords are case-insensitive; tag keys and values are not.
	f(rule("Country", "EQ", Text("US")), subscriber, true)
	f(rule("COUNTRY", "NEQ", Text("US")), subscriber, false)
	f(rule("EXTERNALID", "Eq", Text("user-42")), subscriber, true)
	f(rule("TAG:plan", "Not_Exists", Value{}), subscriber, false)
	f(rule("TAG:Plan", "exists", Value{}), subscriber, false)

	// A value that is needed but empty makes the rule match nobody.
	for _, v := range []Value{{}, Text(""), List(), List("", "")} {
		for _, op := range []string{"eq", "neq", "contains", "in"} {
			f(rule("country", op, v), subscriber, false)
			f(rule("country", op, v), none, false)
			f(rule("tag:plan", op, v), subscriber, false)
			f(rule("tag:plan", op, v), none, false)
		}
	}
	// Empty elements are ignored next to real ones.
	f(rule("country", "in", List("", "US")), subscriber, true)
	f(rule("country", "in", List("", "DE")), none, false)
	f(rule("country", "neq", List("", "DE")), none, true)
	f(rule("url", "contains", List("", "nothing")), subscriber, false)

	// Numbers and booleans are compared as their text.
	num := mustValue(t, `42`)
	f(rule("tag:age", "eq", num), Attributes{Tags: map[string]string{"age": "42"}}, true)
	f(rule("tag:age", "eq", mustValue(t, `42.0`)), Attributes{Tags: map[string]string{"age": "42"}}, false)
	f(rule("tag:beta", "eq", mustValue(t, `true`)), Attributes{Tags: map[string]string{"beta": "true"}}, true)
	f(rule("tag:beta", "in", mustValue(t, `[false, "yes", 1]`)), Attributes{Tags: map[string]string{"beta": "1"}}, true)
}

func TestContainsFolding(t *testing.T) {
	f := func(attr, needle string, want bool) {
		t.Helper()
		checkMatch(t, Filters{Rules: []Rule{rule("url", "contains", Text(needle))}}, Attributes{URL: attr}, want)
	}
	f("Hello World", "o w", true)
	f("Hello World", "WORLD", true)
	f("Hello World", "worlds", false)
	f("ÉCOLE", "école", true)
	f("straße", "STRASSE", false) // simple folding only, as strings.EqualFold
	f("Straße", "STRAßE", true)
	f("Kelvin", "\u212aelvin", true) // KELVIN SIGN folds to k
	f("\u212aelvin", "kel", true)
	f("Σίσυφος", "ΣΊΣ", true)
	f("ǅ", "ǆ", true)
	f("a\xffb", "\xffB", true) // invalid UTF-8 is compared as U+FFFD
	f("a\xffb", "\uFFFDb", true)
	f("abc", "abcd", false)
	f("", "a", false)
}

func TestMatchMode(t *testing.T) {
	f := func(mode string, rules []Rule, want bool) {
		t.Helper()
		checkMatch(t, Filters{Mode: mode, Rules: rules}, subscriber, want)
	}
	yes := rule("country", "eq", Text("US"))
	yes2 := rule("tag:plan", "exists", Value{})
	no := rule("country", "eq", Text("DE"))
	unknown := rule("browser", "neq", Text("x"))

	for _, mode := range []string{"", "all", "ALL", "every", "bogus"} {
		f(mode, nil, true)
		f(mode, []Rule{}, true)
		f(mode, []Rule{yes}, true)
		f(mode, []Rule{yes, yes2}, true)
		f(mode, []Rule{yes, no}, false)
		f(mode, []Rule{no, yes}, false)
		f(mode, []Rule{yes, unknown}, false)
	}
	for _, mode := range []string{"any", "Any", "ANY"} {
		f(mode, nil, true) // empty filters never narrow
		f(mode, []Rule{}, true)
		f(mode, []Rule{yes}, true)
		f(mode, []Rule{no}, false)
		f(mode, []Rule{no, yes}, true)
		f(mode, []Rule{no, no}, false)
		f(mode, []Rule{unknown}, false)
		f(mode, []Rule{unknown, yes2}, true)
		f(mode, []Rule{rule("country", "eq", Text(""))}, false)
	}
}

func TestExcludes(t *testing.T) {
	f := func(fs Filters, want bool) {
		t.Helper()
		if got := fs.Excludes(subscriber); got != want {
			t.Fatalf("Excludes(%+v) = %v, want %v", fs, got, want)
		}
		if got := Compile(fs).Excludes(subscriber); got != want {
			t.Fatalf("Compile(%+v).Excludes = %v, want %v", fs, got, want)
		}
	}
	f(Filters{}, false)
	f(Filters{Mode: "any"}, false)
	f(Filters{Rules: []Rule{}}, false)
	f(Filters{Rules: []Rule{rule("country", "eq", Text("US"))}}, true)
	f(Filters{Rules: []Rule{rule("country", "eq", Text("DE"))}}, false)
	f(Filters{Mode: "any", Rules: []Rule{rule("country", "eq", Text("DE")), rule("tag:plan", "eq", Text("pro"))}}, true)
	f(Filters{Rules: []Rule{rule("browser", "neq", Text("x"))}}, false)
}

func TestEmpty(t *testing.T) {
	f := func(fs Filters, want bool) {
		t.Helper()
		if got := fs.Empty(); got != want {
			t.Fatalf("Empty(%+v) = %v, want %v", fs, got, want)
		}
		if got := Compile(fs).Empty(); got != want {
			t.Fatalf("Compile(%+v).Empty() = %v, want %v", fs, got, want)
		}
	}
	f(Filters{}, true)
	f(Filters{Mode: "any", Rules: []Rule{}}, true)
	f(Filters{Rules: []Rule{{}}}, false)
	f(Filters{Rules: []Rule{rule("country", "eq", Text("US"))}}, false)
}

func TestComplete(t *testing.T) {
	f := func(want bool, rules ...Rule) {
		t.Helper()
		fs := Filters{Rules: rules}
		if got := fs.Complete(); got != want {
			t.Fatalf("Complete(%+v) = %v, want %v", rules, got, want)
		}
		if got := fs.Normalize().Complete(); got != want {
			t.Fatalf("Normalize(%+v).Complete() = %v, want %v", rules, got, want)
		}
	}
	f(false)
	f(false, Rule{})
	f(true, rule("country", "eq", Text("US")))
	f(true, rule("country", "", Text("US")))
	f(true, rule("country", "in", List("US")))
	f(true, rule("country", "in", List("", "US")))
	f(false, rule("country", "eq", Value{}))
	f(false, rule("country", "eq", Text("")))
	f(false, rule("country", "in", List()))
	f(false, rule("country", "in", List("", "")))
	f(false, rule("country", "neq", Value{}))
	f(false, rule("country", "contains", Text("")))
	f(false, rule("", "eq", Text("US")))
	f(true, rule("country", "exists", Value{}))
	f(true, rule("country", "not_exists", Value{}))
	f(true, rule("country", "EXISTS", Value{}))
	f(false, rule("country", "bogus", Value{})) // unknown op is eq: needs a value
	f(true, rule("tag:plan", "exists", Value{}))
	f(true, rule("tag:plan", "eq", Text("pro")))
	f(false, rule("tag:", "exists", Value{}))
	f(false, rule("TAG:", "eq", Text("pro")))
	f(false, rule("tag:plan", "eq", Value{}))
	f(true, rule("tag:plan", "eq", mustValue(t, `0`)))
	f(true, rule("tag:plan", "eq", mustValue(t, `false`)))
	// A field the spec does not name is still a field (it matches nobody).
	f(true, rule("browser", "eq", Text("Chrome")))
	// One complete rule is enough.
	f(true, Rule{}, rule("tag:", "exists", Value{}), rule("language", "eq", Text("de")))
	f(false, Rule{}, rule("tag:", "exists", Value{}), rule("language", "eq", Text("")))
}

func TestNormalize(t *testing.T) {
	f := func(in, want Filters) {
		t.Helper()
		got := in.Normalize()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Normalize(%+v)\n got %+v\nwant %+v", in, got, want)
		}
		if again := got.Normalize(); !reflect.DeepEqual(again, got) {
			t.Fatalf("Normalize is not idempotent: %+v then %+v", got, again)
		}
	}
	f(Filters{}, Filters{Mode: "all"})
	f(Filters{Mode: "ANY", Rules: []Rule{}}, Filters{Mode: "any", Rules: []Rule{}})
	f(Filters{Mode: "bogus"}, Filters{Mode: "all"})
	f(Filters{Rules: []Rule{
		rule("externalId", "", Text("u1")),
		rule("Country", "NEQ", List("US")),
		rule("TAG:Plan", "bogus", Text("pro")),
		rule("browser", "Exists", Value{}),
		rule("tag:", "in", Text("x")),
		rule("EXTERNAL_ID", "not_exists", Value{}),
		rule("url", "Contains", Text("X")),
		rule("language", "in", List("en")),
	}}, Filters{Mode: "all", Rules: []Rule{
		rule("external_id", "eq", Text("u1")),
		rule("country", "neq", List("US")),
		rule("tag:Plan", "eq", Text("pro")),
		rule("browser", "exists", Value{}),
		rule("tag:", "in", Text("x")),
		rule("external_id", "not_exists", Value{}),
		rule("url", "contains", Text("X")),
		rule("language", "in", List("en")),
	}})

	// Normalize does not write into the caller's rules.
	in := Filters{Rules: []Rule{rule("externalId", "", Text("u1"))}}
	in.Normalize()
	if in.Rules[0].Field != "externalId" || in.Rules[0].Op != "" {
		t.Fatalf("Normalize modified its receiver: %+v", in)
	}
}

func TestParse(t *testing.T) {
	f := func(raw string, want Filters) {
		t.Helper()
		got, err := Parse([]byte(raw))
		if err != nil {
			t.Fatalf("Parse(%s): %v", raw, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Parse(%s)\n got %#v\nwant %#v", raw, got, want)
		}
	}
	f(`{"match":"any","rules":[{"field":"country","op":"in","value":["US","CA"]}]}`,
		Filters{Mode: "any", Rules: []Rule{rule("country", "in", List("US", "CA"))}})
	f(`{"rules":[{"field":"tag:plan","value":"pro"},{"field":"url","op":"exists"}]}`,
		Filters{Rules: []Rule{rule("tag:plan", "", Text("pro")), rule("url", "exists", Value{})}})
	f(`{"rules":[{"field":"tag:n","value":1.50},{"field":"tag:b","value":false,"extra":1}]}`,
		Filters{Rules: []Rule{rule("tag:n", "", Text("1.50")), rule("tag:b", "", Text("false"))}})
	f(`{"rules":[{"field":"x","value":null}]}`, Filters{Rules: []Rule{rule("x", "", Value{})}})
	f(`{"rules":[]}`, Filters{Rules: []Rule{}})
	f(`{}`, Filters{})
	f(`null`, Filters{})
	f(` {"match":"all","rules":null} `, Filters{Mode: "all"})
	f(`{"rules":[null]}`, Filters{Rules: []Rule{{}}})
	f(`{"unknown":true,"rules":[]}`, Filters{Rules: []Rule{}})

	bad := func(raw string) {
		t.Helper()
		if got, err := Parse([]byte(raw)); err == nil {
			t.Fatalf("Parse(%s) = %+v, want an error", raw, got)
		}
	}
	bad(``)
	bad(`{`)
	bad(`{"rules":[}`)
	bad(`{"rules":[]} x`)
	bad(`[]`)
	bad(`"all"`)
	bad(`42`)
	bad(`{"match":1,"rules":[]}`)
	bad(`{"match":["any"],"rules":[]}`)
	bad(`{"rules":{}}`)
	bad(`{"rules":"country"}`)
	bad(`{"rules":[1]}`)
	bad(`{"rules":["country"]}`)
	bad(`{"rules":[{"field":1}]}`)
	bad(`{"rules":[{"field":"country","op":true}]}`)
	bad(`{"rules":[{"field":"country","value":{"a":"b"}}]}`)
	bad(`{"rules":[{"field":"country","value":[["US"]]}]}`)
	bad(`{"rules":[{"field":"country","value":[{"a":1}]}]}`)
	bad(`{"rules":[{"field":"country","value":[1,}]}`)
	bad(`{"rules":[{"field":"country","value":01}]}`)
	bad(`{"rules":[{"field":"country","value":"\x"}]}`)
}

func TestFiltersJSON(t *testing.T) {
	f := func(fs Filters, want string) {
		t.Helper()
		raw, err := json.Marshal(fs)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if string(raw) != want {
			t.Fatalf("marshal %+v\n got %s\nwant %s", fs, raw, want)
		}
		back, err := Parse(raw)
		if err != nil {
			t.Fatalf("Parse(%s): %v", raw, err)
		}
		raw2, _ := json.Marshal(back)
		if string(raw2) != want {
			t.Fatalf("round trip of %s gave %s", want, raw2)
		}
	}
	f(Filters{}, `{"rules":[]}`)
	f(Filters{Mode: "any", Rules: []Rule{}}, `{"match":"any","rules":[]}`)
	f(Filters{Rules: []Rule{
		rule("country", "in", List("US", "CA")),
		rule("tag:plan", "", Text("pro")),
		rule("url", "exists", Value{}),
		rule("language", "in", List()),
	}}, `{"rules":[{"field":"country","op":"in","value":["US","CA"]},{"field":"tag:plan","value":"pro"},{"field":"url","op":"exists"},{"field":"language","op":"in","value":[]}]}`)

	// Inside a larger request decoded strictly, the format is the same.
	var req struct {
		Filters        Filters `json:"filters"`
		ExcludeFilters Filters `json:"excludeFilters"`
	}
	dec := json.NewDecoder(strings.NewReader(`{"filters":{"rules":[{"field":"country","value":"US"}]},"excludeFilters":{"match":"any","rules":[{"field":"tag:x","op":"exists"}]}}`))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if !req.Filters.Match(subscriber) || req.ExcludeFilters.Empty() || req.ExcludeFilters.Excludes(subscriber) {
		t.Fatalf("nested decode gave %+v", req)
	}
}

func mustValue(t *testing.T, raw string) Value {
	t.Helper()
	var v Value
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatalf("value %s: %v", raw, err)
	}
	return v
}
