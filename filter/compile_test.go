package filter

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// Small alphabets, so random rules and attributes often meet, including case
// and folding corners (KELVIN SIGN, long s, final sigma, invalid UTF-8).
var (
	randFields = []string{
		"country", "language", "url", "external_id", "externalId", "Country", "EXTERNALID",
		"tag:a", "tag:b", "TAG:a", "tag:A", "tag:", "", "bogus",
	}
	randOps   = []string{"", "eq", "neq", "contains", "in", "exists", "not_exists", "EQ", "Neq", "bogus"}
	randModes = []string{"", "all", "any", "ANY", "bogus"}
	randAtoms = []string{"", "a", "A", "b", "k", "K", "\u212a", "s", "\u017f", "σ", "ς", "Σ", "é", "É", "-", "\xff", "\uFFFD"}
)

func randString(r *rand.Rand, maxAtoms int) string {
	var b strings.Builder
	for range r.IntN(maxAtoms + 1) {
		b.WriteString(randAtoms[r.IntN(len(randAtoms))])
	}
	return b.String()
}

func randValue(r *rand.Rand) Value {
	switch r.IntN(5) {
	case 0:
		return Value{}
	case 1, 2:
		return Text(randString(r, 2))
	default:
		n := r.IntN(12) // long lists exercise the compiled sets
		ss := make([]string, n)
		for i := range ss {
			ss[i] = randString(r, 2)
		}
		return List(ss...)
	}
}

func randFilters(r *rand.Rand) Filters {
	fs := Filters{Mode: randModes[r.IntN(len(randModes))]}
	if r.IntN(8) == 0 {
		return fs
	}
	for range r.IntN(5) {
		fs.Rules = append(fs.Rules, Rule{
			Field: randFields[r.IntN(len(randFields))],
			Op:    randOps[r.IntN(len(randOps))],
			Value: randValue(r),
		})
	}
	return fs
}

func randAttributes(r *rand.Rand) Attributes {
	a := Attributes{
		Country:    randString(r, 2),
		Language:   randString(r, 2),
		URL:        randString(r, 5),
		ExternalID: randString(r, 2),
	}
	if r.IntN(4) > 0 {
		a.Tags = map[string]string{}
		for _, k := range []string{"a", "b", "A", ""} {
			if r.IntN(2) == 0 {
				a.Tags[k] = randString(r, 3)
			}
		}
	}
	return a
}

// TestCompileParity checks, over many random filters and subscribers, that
// the compiled Matcher, the normalized filters and a JSON round trip answer
// exactly as Filters.Match, and that Match agrees with a naive reference.
func TestCompileParity(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	iterations := 20000
	if testing.Short() {
		iterations = 2000
	}
	for range iterations {
		fs := randFilters(r)
		m := Compile(fs)
		norm := fs.Normalize()
		raw, err := json.Marshal(fs)
		if err != nil {
			t.Fatalf("marshal %+v: %v", fs, err)
		}
		back, err := Parse(raw)
		if err != nil {
			t.Fatalf("Parse(%s): %v", raw, err)
		}
		for range 8 {
			a := randAttributes(r)
			want := fs.Match(a)
			if got := m.Match(a); got != want {
				t.Fatalf("Compile(%+v).Match(%+v) = %v, Filters.Match = %v", fs, a, got, want)
			}
			if got := norm.Match(a); got != want {
				t.Fatalf("Normalize(%+v).Match(%+v) = %v, want %v", fs, a, got, want)
			}
			if got := back.Match(a); validUTF8(fs) && got != want {
				t.Fatalf("round trip %s: Match(%+v) = %v, want %v", raw, a, got, want)
			}
			if got := referenceMatch(fs, a); got != want {
				t.Fatalf("Match(%#v, %#v) = %v, reference says %v", fs, a, want, got)
			}
			if got, want := m.Excludes(a), fs.Excludes(a); got != want {
				t.Fatalf("Compile(%+v).Excludes(%+v) = %v, want %v", fs, a, got, want)
			}
		}
	}
}

// referenceMatch restates doc.go as plainly as possible, without the
// package's helpers for fields, ops or folding.
func referenceMatch(fs Filters, a Attributes) bool {
	if len(fs.Rules) == 0 {
		return true
	}
	any := strings.ToLower(fs.Mode) == "any"
	for _, r := range fs.Rules {
		ok := referenceRule(r, a)
		if any && ok {
			return true
		}
		if !any && !ok {
			return false
		}
	}
	return !any
}

func referenceRule(r Rule, a Attributes) bool {
	var attr string
	present := false
	field := strings.ToLower(r.Field)
	switch {
	case field == "country":
		attr = a.Country
	case field == "language":
		attr = a.Language
	case field == "url":
		attr = a.URL
	case field == "external_id", field == "externalid":
		attr = a.ExternalID
	case strings.HasPrefix(field, "tag:") && len(field) > 4:
		attr, present = a.Tags[r.Field[4:]]
	default:
		return false
	}
	if !strings.HasPrefix(field, "tag:") {
		present = attr != ""
	}
	var values []string
	for _, v := range r.Value.Strings() {
		if v != "" {
			values = append(values, v)
		}
	}
	op := strings.ToLower(r.Op)
	switch op {
	case "exists":
		return present
	case "not_exists":
		return !present
	}
	if len(values) == 0 {
		return false
	}
	equal := false
	for _, v := range values {
		if v == attr {
			equal = true
		}
	}
	switch op {
	case "neq":
		return !present || !equal
	case "contains":
		if !present {
			return false
		}
		for _, v := range values {
			if referenceContainsFold(attr, v) {
				return true
			}
		}
		return false
	default:
		return present && equal
	}
}

// referenceContainsFold tries strings.EqualFold on every substring of h that
// starts and ends on a rune boundary.
func referenceContainsFold(h, needle string) bool {
	h, needle = perByteValid(h), perByteValid(needle)
	for i := range h {
		for j := i; j <= len(h); j++ {
			if (j == len(h) || isRuneStart(h[j])) && strings.EqualFold(h[i:j], needle) {
				return true
			}
		}
	}
	return false
}

// perByteValid replaces each invalid byte with U+FFFD, as decoding does.
func perByteValid(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// validUTF8 reports whether every string of fs survives JSON unchanged.
func validUTF8(fs Filters) bool {
	for _, r := range fs.Rules {
		if !utf8.ValidString(r.Field) || !utf8.ValidString(r.Op) {
			return false
		}
		for _, v := range r.Value.Strings() {
			if !utf8.ValidString(v) {
				return false
			}
		}
	}
	return utf8.ValidString(fs.Mode)
}

func TestCompileConstants(t *testing.T) {
	f := func(fs Filters, constant *bool) {
		t.Helper()
		m := Compile(fs)
		switch {
		case constant == nil && m.constant != nil:
			t.Fatalf("Compile(%+v) is constant %v, want evaluated", fs, *m.constant)
		case constant != nil && (m.constant == nil || *m.constant != *constant):
			t.Fatalf("Compile(%+v) constant = %v, want %v", fs, m.constant, *constant)
		}
	}
	yes, no := ptr(true), ptr(false)
	f(Filters{}, yes)
	f(Filters{Mode: "any"}, yes)
	f(Filters{Rules: []Rule{rule("country", "eq", Text("US"))}}, nil)
	f(Filters{Rules: []Rule{rule("country", "eq", Text("US")), rule("bogus", "eq", Text("x"))}}, no)
	f(Filters{Rules: []Rule{rule("country", "eq", Text(""))}}, no)
	f(Filters{Mode: "any", Rules: []Rule{rule("bogus", "neq", Text("x")), rule("tag:", "exists", Value{})}}, no)
	f(Filters{Mode: "any", Rules: []Rule{rule("bogus", "neq", Text("x")), rule("url", "exists", Value{})}}, nil)
}

func TestCompileDoesNotAlias(t *testing.T) {
	fs := Filters{Rules: []Rule{rule("country", "in", List("US", "CA"))}}
	m := Compile(fs)
	fs.Rules[0].Value.items[0] = "DE"
	fs.Rules[0].Field = "language"
	if !m.Match(Attributes{Country: "US"}) {
		t.Fatal("Matcher changed with the filters it was compiled from")
	}
}
