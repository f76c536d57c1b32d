package filter

import (
	"encoding/json"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse. Whatever parses must evaluate
// without panicking, the compiled form must agree with Filters.Match, and
// marshalling must be stable through another Parse.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"match":"any","rules":[{"field":"country","op":"in","value":["US","CA"]}]}`,
		`{"rules":[{"field":"tag:plan","op":"neq","value":"pro"},{"field":"url","op":"contains","value":"PRICING"}]}`,
		`{"rules":[{"field":"externalId","value":42},{"field":"tag:beta","value":true},{"field":"language","value":null}]}`,
		`{"rules":[{"field":"tag:","op":"exists"},{"field":"browser","op":"not_exists"}]}`,
		`{"match":"ANY","rules":[{"field":"URL","op":"CONTAINS","value":["\u212a","ſ",""]}]}`,
		`{"rules":[{"field":"country","op":"in","value":["a","b","c","d","e","f","g","h","i","US"]}]}`,
		`{"rules":[]}`, `{}`, `null`, `[]`, `{"rules":[null]}`, `{"rules":[{"value":[[]]}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := Parse(data)
		if err != nil {
			return
		}
		m := Compile(fs)
		norm := fs.Normalize()
		for _, a := range fuzzAttributes(fs) {
			want := fs.Match(a)
			if got := m.Match(a); got != want {
				t.Fatalf("Compile(%#v).Match(%#v) = %v, Filters.Match = %v", fs, a, got, want)
			}
			if got := norm.Match(a); got != want {
				t.Fatalf("Normalize(%#v).Match(%#v) = %v, want %v", fs, a, got, want)
			}
			if got, want := m.Excludes(a), fs.Excludes(a); got != want {
				t.Fatalf("Compile(%#v).Excludes(%#v) = %v, want %v", fs, a, got, want)
			}
		}
		_ = fs.Complete()
		if norm.Complete() != fs.Complete() {
			t.Fatalf("Normalize changed Complete for %#v", fs)
		}

		raw, err := json.Marshal(fs)
		if err != nil {
			t.Fatalf("Marshal(%#v): %v", fs, err)
		}
		back, err := Parse(raw)
		if err != nil {
			t.Fatalf("Parse(Marshal) of %s: %v", raw, err)
		}
		raw2, err := json.Marshal(back)
		if err != nil || string(raw2) != string(raw) {
			t.Fatalf("marshal not stable: %s then %s (%v)", raw, raw2, err)
		}
		for _, a := range fuzzAttributes(fs) {
			if back.Match(a) != fs.Match(a) {
				t.Fatalf("round trip %s changed Match(%#v)", raw, a)
			}
		}
	})
}

// fuzzAttributes builds subscribers that the rules are likely to care about:
// nobody, and people whose every field and tag holds each rule's elements.
func fuzzAttributes(fs Filters) []Attributes {
	out := []Attributes{{}, subscriber}
	for _, r := range fs.Rules {
		for _, v := range r.Value.Strings() {
			kind, key := parseField(r.Field)
			a := Attributes{Country: v, Language: v, URL: "x" + v + "y", ExternalID: v}
			if kind == fieldTag {
				a.Tags = map[string]string{key: v}
			}
			out = append(out, a)
			if len(out) > 32 {
				return out
			}
		}
	}
	return out
}
