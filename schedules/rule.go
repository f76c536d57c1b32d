package schedules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Frequencies of a rule.
const (
	Daily   = "DAILY"
	Weekly  = "WEEKLY"
	Monthly = "MONTHLY"
)

// maxRuleLen bounds a rule's text.
const maxRuleLen = 512

// maxInterval bounds INTERVAL.
const maxInterval = 1000

// Weekday is a BYDAY entry: a day of the week, and for a MONTHLY rule
// optionally which of the month's (1 to 5 from the start, -1 to -5 from
// the end; 0 every one).
type Weekday struct {
	N   int
	Day time.Weekday
}

// Rule is a parsed RRULE of the supported subset (see doc.go).
type Rule struct {
	Freq       string
	Interval   int
	ByDay      []Weekday
	ByMonthDay []int
	ByHour     []int
	ByMinute   []int
}

var dayNames = []string{"SU", "MO", "TU", "WE", "TH", "FR", "SA"}

// ruleError is a rule that cannot be used, as the API answers it.
func ruleError(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidRule, Message: "rule: " + fmt.Sprintf(format, args...)}
}

// ParseRule reads an RRULE of the supported subset: an optional "RRULE:"
// prefix, then KEY=VALUE parts separated by ';', keys in any case. It
// never panics; anything outside the subset is an *Error with code
// invalid_rule naming what is wrong.
func ParseRule(s string) (Rule, error) {
	if len(s) > maxRuleLen {
		return Rule{}, ruleError("at most %d characters", maxRuleLen)
	}
	s = strings.TrimSpace(s)
	if len(s) >= 6 && strings.EqualFold(s[:6], "RRULE:") {
		s = s[6:]
	}
	if s == "" {
		return Rule{}, ruleError("empty; write e.g. FREQ=DAILY;BYHOUR=9;BYMINUTE=0")
	}
	r := Rule{Interval: 1}
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ";") {
		key, value, ok := strings.Cut(part, "=")
		key = strings.ToUpper(strings.TrimSpace(key))
		value = strings.TrimSpace(value)
		if !ok || key == "" || value == "" {
			return Rule{}, ruleError("%q is not KEY=VALUE", part)
		}
		if seen[key] {
			return Rule{}, ruleError("%s is given twice", key)
		}
		seen[key] = true
		var err error
		switch key {
		case "FREQ":
			r.Freq = strings.ToUpper(value)
			if !slices.Contains([]string{Daily, Weekly, Monthly}, r.Freq) {
				return Rule{}, ruleError("FREQ must be DAILY, WEEKLY or MONTHLY")
			}
		case "INTERVAL":
			r.Interval, err = number(value, 1, maxInterval)
			if err != nil {
				return Rule{}, ruleError("INTERVAL must be a whole number from 1 to %d", maxInterval)
			}
		case "BYDAY":
			for v := range strings.SplitSeq(value, ",") {
				d, err := parseWeekday(strings.ToUpper(strings.TrimSpace(v)))
				if err != nil {
					return Rule{}, err
				}
				r.ByDay = append(r.ByDay, d)
			}
		case "BYMONTHDAY":
			if r.ByMonthDay, err = numbers(value, -31, 31, "BYMONTHDAY", true); err != nil {
				return Rule{}, err
			}
		case "BYHOUR":
			if r.ByHour, err = numbers(value, 0, 23, "BYHOUR", false); err != nil {
				return Rule{}, err
			}
		case "BYMINUTE":
			if r.ByMinute, err = numbers(value, 0, 59, "BYMINUTE", false); err != nil {
				return Rule{}, err
			}
		case "COUNT", "UNTIL":
			return Rule{}, ruleError("%s is not supported; end a schedule with endsAt", key)
		case "DTSTART":
			return Rule{}, ruleError("DTSTART is not supported; start a schedule with startsAt")
		default:
			return Rule{}, ruleError("%s is not supported (FREQ, INTERVAL, BYDAY, BYMONTHDAY, BYHOUR, BYMINUTE are)", key)
		}
	}
	return r, r.check()
}

// check refuses a rule that names no time or no day to send on.
func (r *Rule) check() error {
	switch {
	case r.Freq == "":
		return ruleError("FREQ is required (DAILY, WEEKLY or MONTHLY)")
	case len(r.ByHour) == 0:
		return ruleError("BYHOUR is required: the hours of the day it sends at")
	case r.Freq == Weekly && len(r.ByDay) == 0:
		return ruleError("a WEEKLY rule needs BYDAY: the days of the week it sends on")
	case r.Freq == Weekly && len(r.ByMonthDay) > 0:
		return ruleError("BYMONTHDAY does not go with FREQ=WEEKLY")
	case r.Freq == Monthly && len(r.ByDay) == 0 && len(r.ByMonthDay) == 0:
		return ruleError("a MONTHLY rule needs BYMONTHDAY or BYDAY: the days of the month it sends on")
	}
	for _, d := range r.ByDay {
		if d.N != 0 && r.Freq != Monthly {
			return ruleError("a numbered BYDAY (%s) needs FREQ=MONTHLY", d)
		}
	}
	if len(r.ByMinute) == 0 {
		r.ByMinute = []int{0}
	}
	for _, l := range []*[]int{&r.ByMonthDay, &r.ByHour, &r.ByMinute} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	slices.SortFunc(r.ByDay, func(a, b Weekday) int {
		if a.N != b.N {
			return a.N - b.N
		}
		return int(a.Day) - int(b.Day)
	})
	r.ByDay = slices.Compact(r.ByDay)
	return nil
}

func (d Weekday) String() string {
	if d.N == 0 {
		return dayNames[d.Day]
	}
	return strconv.Itoa(d.N) + dayNames[d.Day]
}

// parseWeekday reads MO, or with an ordinal 1MO, +2TU, -1FR.
func parseWeekday(v string) (Weekday, error) {
	if len(v) < 2 {
		return Weekday{}, ruleError("BYDAY %q is not a day (MO, TU, WE, TH, FR, SA, SU, optionally numbered: 1MO, -1FR)", v)
	}
	day := slices.Index(dayNames, v[len(v)-2:])
	if day < 0 {
		return Weekday{}, ruleError("BYDAY %q is not a day (MO, TU, WE, TH, FR, SA, SU, optionally numbered: 1MO, -1FR)", v)
	}
	w := Weekday{Day: time.Weekday(day)}
	if prefix := v[:len(v)-2]; prefix != "" {
		neg := strings.HasPrefix(prefix, "-")
		prefix = strings.TrimPrefix(strings.TrimPrefix(prefix, "-"), "+")
		n, err := number(prefix, 1, 5)
		if err != nil {
			return Weekday{}, ruleError("BYDAY %q: the number before the day must be 1 to 5 or -1 to -5", v)
		}
		if neg {
			n = -n
		}
		w.N = n
	}
	return w, nil
}

// number reads a decimal of at most 4 digits within [lo, hi].
func number(v string, lo, hi int) (int, error) {
	if v == "" || len(v) > 4 {
		return 0, strconv.ErrSyntax
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	n, _ := strconv.Atoi(v)
	if n < lo || n > hi {
		return 0, strconv.ErrRange
	}
	return n, nil
}

// numbers reads a comma-separated list within [lo, hi]; signed allows a
// leading '-' or '+' (never 0).
func numbers(value string, lo, hi int, key string, signed bool) ([]int, error) {
	var out []int
	for v := range strings.SplitSeq(value, ",") {
		v = strings.TrimSpace(v)
		neg := false
		if signed && (strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+")) {
			neg, v = v[0] == '-', v[1:]
		}
		n, err := number(v, 0, max(hi, -lo))
		if neg {
			n = -n
		}
		if err != nil || n < lo || n > hi || (signed && n == 0) {
			if signed {
				return nil, ruleError("%s values must be 1 to %d or -1 to -%d", key, hi, -lo)
			}
			return nil, ruleError("%s values must be %d to %d", key, lo, hi)
		}
		out = append(out, n)
	}
	return out, nil
}

// String is the rule in canonical form: parts in a fixed order, lists
// sorted, INTERVAL left out when 1.
func (r Rule) String() string {
	parts := []string{"FREQ=" + r.Freq}
	if r.Interval > 1 {
		parts = append(parts, "INTERVAL="+strconv.Itoa(r.Interval))
	}
	if len(r.ByDay) > 0 {
		days := make([]string, len(r.ByDay))
		for i, d := range r.ByDay {
			days[i] = d.String()
		}
		parts = append(parts, "BYDAY="+strings.Join(days, ","))
	}
	list := func(key string, l []int) {
		if len(l) > 0 {
			s := make([]string, len(l))
			for i, n := range l {
				s[i] = strconv.Itoa(n)
			}
			parts = append(parts, key+"="+strings.Join(s, ","))
		}
	}
	list("BYMONTHDAY", r.ByMonthDay)
	list("BYHOUR", r.ByHour)
	list("BYMINUTE", r.ByMinute)
	return strings.Join(parts, ";")
}
