package automations

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/relaybell/relaybell/filter"
)

func TestMatches(t *testing.T) {
	f := func(conditions, properties string, want bool) {
		t.Helper()
		raw, err := filter.Parse([]byte(conditions))
		if err != nil {
			t.Fatal(err)
		}
		c, err := checkConditions(raw)
		if err != nil {
			t.Fatalf("%s: %v", conditions, err)
		}
		if got := Matches(&c, json.RawMessage(properties)); got != want {
			t.Errorf("%s on %s: %v, want %v", conditions, properties, got, want)
		}
	}
	rule := func(op, value string) string {
		return `{"rules":[{"field":"properties.cart.value","op":"` + op + `","value":` + value + `}]}`
	}
	f(rule("gt", "50"), `{"cart":{"value":50.01}}`, true)
	f(rule("gt", "50"), `{"cart":{"value":50}}`, false)
	f(rule("gte", "50"), `{"cart":{"value":50}}`, true)
	f(rule("lt", "50"), `{"cart":{"value":-3}}`, true)
	f(rule("lt", "50"), `{"cart":{"value":50}}`, false)
	f(rule("lte", "50"), `{"cart":{"value":50}}`, true)
	f(rule("lte", `"50"`), `{"cart":{"value":50}}`, true) // the bound may be written as text
	// A property that is not a number matches no comparison.
	for _, op := range []string{"gt", "gte", "lt", "lte"} {
		f(rule(op, "50"), `{"cart":{"value":"50"}}`, false)
		f(rule(op, "50"), `{"cart":{"value":true}}`, false)
		f(rule(op, "50"), `{"cart":{}}`, false)
		f(rule(op, "50"), `{}`, false)
		f(rule(op, "50"), ``, false)
	}
	f(rule("eq", `"50"`), `{"cart":{"value":50.0}}`, true)
	f(rule("eq", `"gold"`), `{"cart":{"value":"gold"}}`, true)
	f(rule("neq", `"gold"`), `{"cart":{"value":"silver"}}`, true)
	f(rule("neq", `"gold"`), `{}`, true)
	f(rule("in", `["a","b"]`), `{"cart":{"value":"b"}}`, true)
	f(rule("contains", `"OLD"`), `{"cart":{"value":"golden"}}`, true)
	f(`{"rules":[{"field":"properties.cart.value","op":"exists"}]}`, `{"cart":{"value":0}}`, true)
	f(`{"rules":[{"field":"properties.cart.value","op":"exists"}]}`, `{"cart":{"value":null}}`, false)
	f(`{"rules":[{"field":"properties.cart.value","op":"not_exists"}]}`, `{"cart":[1]}`, true)
	two := `{"match":"%s","rules":[{"field":"properties.a","op":"gt","value":1},{"field":"properties.b","value":"x"}]}`
	f(fmt.Sprintf(two, "all"), `{"a":2,"b":"x"}`, true)
	f(fmt.Sprintf(two, "all"), `{"a":2,"b":"y"}`, false)
	f(fmt.Sprintf(two, "any"), `{"a":0,"b":"x"}`, true)
	f(fmt.Sprintf(two, "any"), `{"a":0,"b":"y"}`, false)
}
