// Package promnames finds the metric names a PromQL expression reads,
// without a PromQL parser: deploy's tests check with it that the dashboard
// and the alert rules read only metrics the binary exports, and
// deploy/helmtest checks it against Prometheus's own parser on every
// expression of those files.
package promnames

import (
	"regexp"
	"slices"
	"strings"
)

// promKeywords are PromQL words that are not metric names.
var promKeywords = map[string]bool{
	"by": true, "without": true, "and": true, "or": true, "unless": true, "on": true, "ignoring": true,
	"group_left": true, "group_right": true, "bool": true, "offset": true, "inf": true, "nan": true,
}

var (
	promStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	promRanges   = regexp.MustCompile(`\[[^\[\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promNumbers  = regexp.MustCompile(`(^|[^a-zA-Z0-9_:.])[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?`)
	promIdents   = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
)

// MetricNames returns the metric names of a PromQL expression: what is
// left of it without strings, label matchers, ranges, grouping labels,
// numbers, function calls and keywords. A Grafana variable ($name) never
// stands for a metric here.
func MetricNames(expr string) []string {
	s := promStrings.ReplaceAllString(expr, `""`)
	s = promMatchers.ReplaceAllString(s, " ")
	s = promRanges.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	s = regexp.MustCompile(`\$[a-zA-Z_]+`).ReplaceAllString(s, " ")
	s = promNumbers.ReplaceAllString(s, "$1 ")
	var names []string
	for _, m := range promIdents.FindAllString(s, -1) {
		if strings.HasSuffix(m, "(") || promKeywords[strings.ToLower(m)] {
			continue // a function, or a word of the language
		}
		if !slices.Contains(names, m) {
			names = append(names, m)
		}
	}
	return names
}
