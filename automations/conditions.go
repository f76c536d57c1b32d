package automations

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/relaybell/relaybell/filter"
)

// PropertiesPrefix starts a condition's field: the rest is a dotted path
// into the event's properties.
const PropertiesPrefix = "properties."

// Operators of conditions beyond spec 2.2's: they compare numbers, and a
// property that is not a number matches none of them.
const (
	OpGt  = "gt"
	OpGte = "gte"
	OpLt  = "lt"
	OpLte = "lte"
)

var conditionOps = map[string]bool{
	filter.OpEq: true, filter.OpNeq: true, filter.OpContains: true, filter.OpIn: true,
	filter.OpExists: true, filter.OpNotExists: true, OpGt: true, OpGte: true, OpLt: true, OpLte: true,
}

func numericOp(op string) bool { return op == OpGt || op == OpGte || op == OpLt || op == OpLte }

// checkConditions validates conditions: at most MaxConditions rules, each
// on properties.<path> with a known operator and a value (a number for
// gt, gte, lt and lte) unless exists or not_exists. It returns them with
// match and op spelled out.
func checkConditions(f filter.Filters) (filter.Filters, error) {
	bad := func(format string, args ...any) (filter.Filters, error) {
		return filter.Filters{}, errorf("invalid_filters", format, args...)
	}
	out := filter.Filters{Mode: filter.MatchAll, Rules: make([]filter.Rule, len(f.Rules))}
	switch strings.ToLower(f.Mode) {
	case "", filter.MatchAll:
	case filter.MatchAny:
		out.Mode = filter.MatchAny
	default:
		return bad("conditions.match is all or any")
	}
	if len(f.Rules) == 0 || len(f.Rules) > MaxConditions {
		return bad("conditions hold 1 to %d rules", MaxConditions)
	}
	for i, r := range f.Rules {
		path, ok := strings.CutPrefix(r.Field, PropertiesPrefix)
		if !ok || path == "" || strings.HasPrefix(path, ".") || strings.HasSuffix(path, ".") || strings.Contains(path, "..") {
			return bad("conditions.rules[%d].field must be properties.<name>, a dotted path into the event's properties", i)
		}
		r.Op = strings.ToLower(r.Op)
		if r.Op == "" {
			r.Op = filter.OpEq
		}
		if !conditionOps[r.Op] {
			return bad("conditions.rules[%d].op is eq, neq, contains, in, exists, not_exists, gt, gte, lt or lte", i)
		}
		values := r.Value.Strings()
		switch {
		case r.Op == filter.OpExists || r.Op == filter.OpNotExists:
		case len(values) == 0:
			return bad("conditions.rules[%d] needs a value", i)
		case numericOp(r.Op):
			if _, err := strconv.ParseFloat(values[0], 64); err != nil || len(values) != 1 || r.Value.IsList() {
				return bad("conditions.rules[%d].value must be a number for %s", i, r.Op)
			}
		}
		out.Rules[i] = r
	}
	return out, nil
}

// Matches reports whether an event's properties (a JSON object, or empty)
// pass the conditions; nil conditions pass everything.
func Matches(f *filter.Filters, properties json.RawMessage) bool {
	if f == nil || len(f.Rules) == 0 {
		return true
	}
	var props map[string]any
	if len(properties) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(properties)))
		dec.UseNumber()
		if dec.Decode(&props) != nil {
			props = nil
		}
	}
	matchAny := f.Mode == filter.MatchAny
	for _, r := range f.Rules {
		if ruleMatches(r, props) == matchAny {
			return matchAny
		}
	}
	return !matchAny
}

// property is the value at a dotted path of the properties, and whether
// there is one (null counts as none).
func property(props map[string]any, path string) (any, bool) {
	var v any = props
	for _, key := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[key]; !ok {
			return nil, false
		}
	}
	return v, v != nil
}

func ruleMatches(r filter.Rule, props map[string]any) bool {
	v, present := property(props, strings.TrimPrefix(r.Field, PropertiesPrefix))
	switch r.Op {
	case filter.OpExists:
		return present
	case filter.OpNotExists:
		return !present
	}
	values := r.Value.Strings()
	if numericOp(r.Op) {
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		x, err1 := n.Float64()
		y, err2 := strconv.ParseFloat(values[0], 64)
		if err1 != nil || err2 != nil {
			return false
		}
		switch r.Op {
		case OpGt:
			return x > y
		case OpGte:
			return x >= y
		case OpLt:
			return x < y
		}
		return x <= y
	}
	text, ok := scalar(v)
	switch r.Op {
	case filter.OpNeq:
		return !ok || !equalsAny(v, text, values)
	case filter.OpContains:
		if !ok {
			return false
		}
		for _, want := range values {
			if want != "" && strings.Contains(strings.ToLower(text), strings.ToLower(want)) {
				return true
			}
		}
		return false
	}
	return ok && equalsAny(v, text, values) // eq, in
}

// scalar is a property's text: a string as it is, a number or a boolean
// as written; objects, arrays and null have none.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// equalsAny compares a property with the values: numbers by value (10
// equals 10.0), anything else as text.
func equalsAny(v any, text string, values []string) bool {
	n, isNumber := v.(json.Number)
	for _, want := range values {
		if isNumber {
			x, err1 := n.Float64()
			y, err2 := strconv.ParseFloat(want, 64)
			if err1 == nil && err2 == nil && x == y {
				return true
			}
		}
		if text == want {
			return true
		}
	}
	return false
}
