package filter

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Match modes (spec 2.2 `match`).
const (
	MatchAll = "all" // every rule must match (the default)
	MatchAny = "any" // at least one rule must match
)

// Operators (spec 2.2 `rules[].op`).
const (
	OpEq        = "eq" // the default, also for an unknown op
	OpNeq       = "neq"
	OpContains  = "contains"
	OpIn        = "in"
	OpExists    = "exists"
	OpNotExists = "not_exists"
)

// Fields (spec 2.2 `rules[].field`). A tag rule is TagPrefix followed by the
// tag's key.
const (
	FieldCountry         = "country"
	FieldLanguage        = "language"
	FieldURL             = "url"
	FieldExternalID      = "external_id"
	FieldExternalIDAlias = "externalId"
	TagPrefix            = "tag:"
)

// Filters is the segment filter format of spec 2.2, shared by segments,
// inline send filters, excludeFilters, schedules and the audience list.
type Filters struct {
	// Mode is the JSON `match` member: "all" (the default) or "any". It is
	// not called Match because that is the method that evaluates.
	Mode  string `json:"match,omitempty"`
	Rules []Rule `json:"rules"`
}

// Rule is one condition on a subscriber attribute.
type Rule struct {
	Field string `json:"field"`
	Op    string `json:"op,omitempty"`
	Value Value  `json:"value,omitzero"`
}

// Attributes is what a rule is evaluated against: one subscriber.
type Attributes struct {
	Country    string // 2-letter upper-case code, "" when unknown
	Language   string // as stored, e.g. "en-US"
	URL        string // last page seen
	ExternalID string
	Tags       map[string]string // key to value; a null tag value is ""
}

// Parse decodes the JSON form {match, rules}. It fails on malformed JSON or
// on a member of the wrong type; unknown members are ignored and JSON null
// gives empty Filters. The result is as written: call Normalize for the
// canonical form. Parse does not check completeness (see Complete) or the
// number of rules; those limits belong to the caller.
func Parse(raw []byte) (Filters, error) {
	var f Filters
	if err := json.Unmarshal(raw, &f); err != nil {
		return Filters{}, fmt.Errorf("parsing filters: %w", err)
	}
	return f, nil
}

// MarshalJSON writes rules as an array even when there are none.
func (f Filters) MarshalJSON() ([]byte, error) {
	type plain Filters // no methods: avoids recursion
	p := plain(f)
	if p.Rules == nil {
		p.Rules = []Rule{}
	}
	return json.Marshal(p)
}

// Empty reports whether there are no rules. Empty filters never narrow an
// audience: they match everyone and exclude no one.
func (f Filters) Empty() bool { return len(f.Rules) == 0 }

// Match reports whether a subscriber is in the audience the filters describe:
// every rule matches (match "all", the default) or at least one does (match
// "any"). Empty filters match everyone in either mode. Match does not
// allocate.
func (f Filters) Match(a Attributes) bool {
	if len(f.Rules) == 0 {
		return true
	}
	if isAny(f.Mode) {
		for i := range f.Rules {
			if f.Rules[i].matches(&a) {
				return true
			}
		}
		return false
	}
	for i := range f.Rules {
		if !f.Rules[i].matches(&a) {
			return false
		}
	}
	return true
}

// Excludes is Match for excludeFilters: filters without rules exclude no one.
func (f Filters) Excludes(a Attributes) bool {
	return len(f.Rules) > 0 && f.Match(a)
}

// Complete reports whether at least one rule is complete: it has a field
// (with its key for `tag:`), and a value unless its op is exists or
// not_exists (spec 2.5; a segment without one gives segment_needs_a_rule).
// A field that is not one of the spec's still counts as a field here, as the
// spec words it; such a rule matches nobody.
func (f Filters) Complete() bool {
	for _, r := range f.Rules {
		if r.Complete() {
			return true
		}
	}
	return false
}

// Complete reports whether the rule has a field (with its key for `tag:`) and
// a value unless its op is exists or not_exists.
func (r Rule) Complete() bool {
	if r.Field == "" || strings.EqualFold(r.Field, TagPrefix) {
		return false
	}
	switch parseOp(r.Op) {
	case opExists, opNotExists:
		return true
	}
	return r.Value.hasText()
}

// Normalize returns a copy in canonical form: match lower-case, "all" unless
// it names "any"; op lower-case, "eq" when empty or unknown; the spec's field
// names lower-case, `externalId` as `external_id` and the `tag:` prefix
// lower-case (the tag key is kept as written). Values are kept as written.
// Normalize never changes what the filters match.
func (f Filters) Normalize() Filters {
	out := Filters{Mode: MatchAll}
	if isAny(f.Mode) {
		out.Mode = MatchAny
	}
	if f.Rules != nil {
		out.Rules = make([]Rule, len(f.Rules))
	}
	for i, r := range f.Rules {
		kind, key := parseField(r.Field)
		switch kind {
		case fieldTag:
			r.Field = TagPrefix + key
		case fieldUnknown:
			// Kept as written; it matches nobody either way.
		default:
			r.Field = fieldNames[kind]
		}
		r.Op = opNames[parseOp(r.Op)]
		out.Rules[i] = r
	}
	return out
}

func isAny(match string) bool { return strings.EqualFold(match, MatchAny) }

type fieldKind uint8

const (
	fieldUnknown fieldKind = iota
	fieldCountry
	fieldLanguage
	fieldURL
	fieldExternalID
	fieldTag
)

var fieldNames = [...]string{
	fieldCountry:    FieldCountry,
	fieldLanguage:   FieldLanguage,
	fieldURL:        FieldURL,
	fieldExternalID: FieldExternalID,
}

// parseField resolves a rule field. Names and the `tag:` prefix are
// case-insensitive; a tag key is exact. `tag:` without a key is unknown.
func parseField(s string) (fieldKind, string) {
	switch {
	case strings.EqualFold(s, FieldCountry):
		return fieldCountry, ""
	case strings.EqualFold(s, FieldLanguage):
		return fieldLanguage, ""
	case strings.EqualFold(s, FieldURL):
		return fieldURL, ""
	case strings.EqualFold(s, FieldExternalID), strings.EqualFold(s, FieldExternalIDAlias):
		return fieldExternalID, ""
	case len(s) > len(TagPrefix) && strings.EqualFold(s[:len(TagPrefix)], TagPrefix):
		return fieldTag, s[len(TagPrefix):]
	}
	return fieldUnknown, ""
}

type opKind uint8

const (
	opEq opKind = iota
	opNeq
	opContains
	opIn
	opExists
	opNotExists
)

var opNames = [...]string{
	opEq:        OpEq,
	opNeq:       OpNeq,
	opContains:  OpContains,
	opIn:        OpIn,
	opExists:    OpExists,
	opNotExists: OpNotExists,
}

// parseOp resolves an op case-insensitively; empty or unknown is eq.
func parseOp(s string) opKind {
	for k := opNeq; k <= opNotExists; k++ {
		if strings.EqualFold(s, opNames[k]) {
			return k
		}
	}
	return opEq
}

// attribute returns the subscriber's value for a field and whether it is
// there: a non-empty value for a built-in field, a present key for a tag.
func (a *Attributes) attribute(kind fieldKind, key string) (string, bool) {
	var s string
	switch kind {
	case fieldCountry:
		s = a.Country
	case fieldLanguage:
		s = a.Language
	case fieldURL:
		s = a.URL
	case fieldExternalID:
		s = a.ExternalID
	case fieldTag:
		s, ok := a.Tags[key]
		return s, ok
	}
	return s, s != ""
}

// matches evaluates one rule. See doc.go for the semantics.
func (r *Rule) matches(a *Attributes) bool {
	kind, key := parseField(r.Field)
	if kind == fieldUnknown {
		return false
	}
	attr, present := a.attribute(kind, key)
	op := parseOp(r.Op)
	switch op {
	case opExists:
		return present
	case opNotExists:
		return !present
	}
	if !r.Value.hasText() {
		return false // incomplete: matches nobody, for neq too
	}
	switch op {
	case opContains:
		if !present {
			return false
		}
		for _, v := range r.Value.items {
			if v != "" && containsFold(attr, v) {
				return true
			}
		}
		return false
	case opNeq:
		return !present || !equalsAny(attr, r.Value.items)
	default: // eq, in
		return present && equalsAny(attr, r.Value.items)
	}
}

// equalsAny reports whether s equals a non-empty element of vs.
func equalsAny(s string, vs []string) bool {
	if s == "" {
		return false
	}
	for _, v := range vs {
		if v == s {
			return true
		}
	}
	return false
}
