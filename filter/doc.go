// Package filter is the one filter engine of RelayBell: the Filters/Rule
// format of spec section 2.2 and its evaluation against one subscriber.
// Inline send filters, excludeFilters, segments, segment preview, schedules
// and the audience list's `filters` parameter all evaluate through it, so a
// rule means the same thing everywhere.
//
// # What it owns
//
//   - The wire format: Filters, Rule and Value, their JSON decoding (Parse)
//     and encoding.
//   - The canonical form (Normalize) and the completeness check a segment
//     needs (Complete; the api answers segment_needs_a_rule when it fails).
//   - Evaluation: Filters.Match and Filters.Excludes, and the precompiled
//     Matcher (Compile) that fan-out runs once per subscriber. Both give the
//     same answer for every input; neither allocates while evaluating.
//
// # What it must never do
//
// No I/O of any kind, no store or bus access, no logging, metrics, goroutines
// or package-level state. It knows nothing of HTTP or API error codes (the
// caller maps a Parse error to invalid_json or invalid_filters) and nothing of
// limits such as "at most 20 rules" (the api enforces those). Subscriber
// attributes come in as Attributes; the caller loads them. Anything that
// translates rules into a query (SQL, say) must agree with Match, which stays
// the reference.
//
// # Semantics
//
// Match (the JSON `match` member, the Filters.Mode field, since Match is the
// method): "all" (the default, and any other text) needs every rule, "any" at
// least one. Filters without rules match everyone in both modes and exclude no
// one (Excludes); empty filters never narrow an audience.
//
// Fields: `country` (2-letter upper-case code), `language` (compared as
// stored, e.g. "en-US"; no prefix matching here, the audience list's own
// `language` parameter does that), `url` (last page), `external_id` or its
// alias `externalId`, and `tag:KEY`. An unknown field, and `tag:` with an
// empty key, match nobody whatever the op, `neq` and `not_exists` included.
//
// Ops: `eq` (also for an empty or unknown op), `neq`, `contains`, `in`,
// `exists`, `not_exists`. Keywords (match, op, the spec's field names and the
// `tag:` prefix) are read case-insensitively, so "NEQ" is neq rather than an
// unknown op; tag keys and values are exact.
//
// Values are compared as text. `eq`, `neq` and `in` are case-sensitive;
// `contains` is a case-insensitive substring test using Unicode simple case
// folding (the equivalence of strings.EqualFold).
//
//   - eq / in: the attribute equals one of the value's elements. A scalar is
//     a one-element list, so eq with a list behaves as in.
//   - neq: the attribute equals none of the elements. For a built-in field an
//     empty attribute differs from any value; for a tag, a subscriber without
//     the tag matches.
//   - contains: the attribute contains at least one element. A subscriber
//     without the tag does not match.
//   - exists: the built-in attribute is non-empty, or the tag is present
//     (even with an empty/null value). not_exists is its negation.
//
// Empty values: only non-empty elements count. A rule whose op needs a value
// and whose value has no non-empty element ("", null, absent, [], [""]) is
// incomplete and matches nobody, for neq too; so eq "" does not select
// subscribers with an empty attribute (not_exists does). This keeps Match in
// line with Complete and means a half-written rule can never widen a send.
// Such a rule does not fail Parse; Complete reports it.
package filter
