package filter

// Requirement is a condition that every subscriber a Matcher matches meets:
// the country is one of Values (Tag is ""), or the tag Tag is set, to one of
// Values when Values is not nil.
type Requirement struct {
	Tag    string
	Values []string
}

// Requirements lists conditions implied by the matcher, so that a store can
// skip subscribers before Match decides: each requirement holds for every
// subscriber Match accepts, but a subscriber meeting them all may still fail
// Match. Only eq and in on country and tags, and exists on tags, of a match
// that needs every rule (or has one rule) give requirements; anything else
// gives none. A matcher that matches nobody or everyone gives none.
func (m *Matcher) Requirements() []Requirement {
	if m.constant != nil || (m.any && len(m.rules) != 1) {
		return nil
	}
	var out []Requirement
	for i := range m.rules {
		r := &m.rules[i]
		switch {
		case r.op == opExists && r.kind == fieldTag:
			out = append(out, Requirement{Tag: r.key})
		case r.op != opEq && r.op != opIn:
		case r.kind == fieldTag:
			out = append(out, Requirement{Tag: r.key, Values: r.values})
		case r.kind == fieldCountry:
			out = append(out, Requirement{Values: r.values})
		}
	}
	return out
}

// UsesTags reports whether Match reads Attributes.Tags, so that a reader can
// leave the tags out when it does not.
func (m *Matcher) UsesTags() bool {
	if m.constant != nil {
		return false
	}
	for i := range m.rules {
		if m.rules[i].kind == fieldTag {
			return true
		}
	}
	return false
}
