package filter

// setThreshold is the list length from which eq/neq/in look values up in a
// map instead of scanning the list. BenchmarkInList puts the crossover at
// about four values.
const setThreshold = 4

// Matcher is Filters precompiled for hot loops (fan-out evaluates it once per
// subscriber): field names and ops resolved once, contains needles case-folded
// once, long value lists turned into sets, rules that can never match folded
// into a constant. Matcher.Match gives the same answer as Filters.Match for
// every subscriber. A Matcher is immutable and safe for concurrent use.
type Matcher struct {
	any   bool
	empty bool // no rules: matches everyone, excludes no one
	// constant, when set, is the answer for every subscriber.
	constant *bool
	rules    []compiledRule
}

type compiledRule struct {
	kind    fieldKind
	key     string
	op      opKind
	values  []string            // non-empty elements, for eq/neq/in
	set     map[string]struct{} // values as a set, when long
	needles []folded            // non-empty elements, for contains
}

// Compile precompiles f. The result does not refer to f's slices.
func Compile(f Filters) *Matcher {
	m := &Matcher{any: isAny(f.Mode), empty: len(f.Rules) == 0}
	never := false
	for _, r := range f.Rules {
		cr, ok := compileRule(r)
		if !ok {
			// A rule that matches nobody: it decides an "all" match and
			// is left out of an "any" match.
			never = true
			continue
		}
		m.rules = append(m.rules, cr)
	}
	switch {
	case m.empty:
		m.constant = ptr(true)
	case !m.any && never:
		m.constant = ptr(false)
		m.rules = nil
	case m.any && len(m.rules) == 0:
		m.constant = ptr(false)
	}
	return m
}

func ptr(b bool) *bool { return &b }

// compileRule resolves one rule; ok is false when it can match nobody.
func compileRule(r Rule) (compiledRule, bool) {
	kind, key := parseField(r.Field)
	if kind == fieldUnknown {
		return compiledRule{}, false
	}
	cr := compiledRule{kind: kind, key: key, op: parseOp(r.Op)}
	if cr.op == opExists || cr.op == opNotExists {
		return cr, true
	}
	seen := make(map[string]struct{}, len(r.Value.items))
	for _, v := range r.Value.items {
		if v == "" {
			continue
		}
		if _, dup := seen[v]; dup {
			continue
		}
		seen[v] = struct{}{}
		if cr.op == opContains {
			cr.needles = append(cr.needles, newFolded(v))
		} else {
			cr.values = append(cr.values, v)
		}
	}
	if len(seen) == 0 {
		return compiledRule{}, false // no value: incomplete
	}
	if len(cr.values) >= setThreshold {
		cr.set = seen
	}
	return cr, true
}

// Empty reports whether the compiled filters had no rules.
func (m *Matcher) Empty() bool { return m.empty }

// Match reports whether the subscriber matches, exactly as Filters.Match
// does. It does not allocate.
func (m *Matcher) Match(a Attributes) bool {
	if m.constant != nil {
		return *m.constant
	}
	if m.any {
		for i := range m.rules {
			if m.rules[i].matches(&a) {
				return true
			}
		}
		return false
	}
	for i := range m.rules {
		if !m.rules[i].matches(&a) {
			return false
		}
	}
	return true
}

// Excludes is Match for excludeFilters, exactly as Filters.Excludes: filters
// without rules exclude no one.
func (m *Matcher) Excludes(a Attributes) bool {
	return !m.empty && m.Match(a)
}

func (r *compiledRule) matches(a *Attributes) bool {
	attr, present := a.attribute(r.kind, r.key)
	switch r.op {
	case opExists:
		return present
	case opNotExists:
		return !present
	case opContains:
		if !present {
			return false
		}
		for i := range r.needles {
			if r.needles[i].in(attr) {
				return true
			}
		}
		return false
	case opNeq:
		return !present || !r.has(attr)
	default: // eq, in
		return present && r.has(attr)
	}
}

func (r *compiledRule) has(s string) bool {
	if s == "" {
		return false
	}
	if r.set != nil {
		_, ok := r.set[s]
		return ok
	}
	for _, v := range r.values {
		if v == s {
			return true
		}
	}
	return false
}
