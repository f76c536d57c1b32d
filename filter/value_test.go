package filter

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestValueJSON(t *testing.T) {
	// f decodes in, checks the elements and list-ness, and that it marshals
	// back as out (alone and inside a Rule).
	f := func(in string, items []string, list bool, out string) {
		t.Helper()
		var v Value
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			t.Fatalf("Unmarshal(%s): %v", in, err)
		}
		if !reflect.DeepEqual(v.Strings(), items) || v.IsList() != list {
			t.Fatalf("Unmarshal(%s) = %q list=%v, want %q list=%v", in, v.Strings(), v.IsList(), items, list)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		if string(raw) != out {
			t.Fatalf("Marshal(Unmarshal(%s)) = %s, want %s", in, raw, out)
		}
		var again Value
		if err := json.Unmarshal(raw, &again); err != nil {
			t.Fatalf("Unmarshal(%s): %v", raw, err)
		}
		if !reflect.DeepEqual(again, v) {
			t.Fatalf("round trip of %s: %#v then %#v", in, v, again)
		}
		r, err := json.Marshal(Rule{Field: "f", Value: v})
		if err != nil {
			t.Fatalf("Marshal rule: %v", err)
		}
		wantRule := `{"field":"f","value":` + out + `}`
		if v.IsZero() {
			wantRule = `{"field":"f"}`
		}
		if string(r) != wantRule {
			t.Fatalf("rule with %s marshals as %s, want %s", in, r, wantRule)
		}
	}
	f(`"US"`, []string{"US"}, false, `"US"`)
	f(`""`, []string{""}, false, `""`)
	f(`"a\"b\u00e9"`, []string{`a"bé`}, false, `"a\"bé"`)
	f(` "x" `, []string{"x"}, false, `"x"`)
	f(`["US","CA"]`, []string{"US", "CA"}, true, `["US","CA"]`)
	f(`["US"]`, []string{"US"}, true, `["US"]`)
	f(`[]`, []string{}, true, `[]`)
	f(` [ "a" , 1 , true , null ] `, []string{"a", "1", "true", ""}, true, `["a","1","true",""]`)
	f(`42`, []string{"42"}, false, `"42"`)
	f(`-1.50`, []string{"-1.50"}, false, `"-1.50"`)
	f(`1e3`, []string{"1e3"}, false, `"1e3"`)
	f(`0`, []string{"0"}, false, `"0"`)
	f(`true`, []string{"true"}, false, `"true"`)
	f(`false`, []string{"false"}, false, `"false"`)
	f(`null`, nil, false, `null`)

	bad := func(in string) {
		t.Helper()
		var v Value
		if err := json.Unmarshal([]byte(in), &v); err == nil {
			t.Fatalf("Unmarshal(%s) = %#v, want an error", in, v)
		}
	}
	bad(`{}`)
	bad(`{"a":"b"}`)
	bad(`[[]]`)
	bad(`["a",["b"]]`)
	bad(`[{}]`)
	bad(`tru`)
	bad(`"unterminated`)
	bad(`[1,]`)
	bad(`01`)

	// Called directly, without encoding/json's checks first.
	for _, in := range []string{``, ` `, `1abc`, `nul`, `nullx`, `tru`, `"x`, `[1,`, `{}`, `x`} {
		var v Value
		if err := v.UnmarshalJSON([]byte(in)); err == nil {
			t.Fatalf("UnmarshalJSON(%q) = %#v, want an error", in, v)
		}
	}
}

func TestValueConstructors(t *testing.T) {
	if v := Text("US"); v.IsList() || v.IsZero() || !reflect.DeepEqual(v.Strings(), []string{"US"}) {
		t.Fatalf("Text: %#v", v)
	}
	if v := List(); !v.IsList() || v.IsZero() || len(v.Strings()) != 0 {
		t.Fatalf("List(): %#v", v)
	}
	src := []string{"a", "b"}
	v := List(src...)
	src[0] = "changed"
	if !reflect.DeepEqual(v.Strings(), []string{"a", "b"}) {
		t.Fatalf("List kept the caller's slice: %#v", v)
	}
	if !(Value{}).IsZero() {
		t.Fatal("zero Value is not IsZero")
	}
	// Absent and null decode to the same thing.
	var r1, r2 Rule
	if err := json.Unmarshal([]byte(`{"field":"x"}`), &r1); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"field":"x","value":null}`), &r2); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r1, r2) || !r1.Value.IsZero() {
		t.Fatalf("absent %#v and null %#v differ", r1, r2)
	}
}
