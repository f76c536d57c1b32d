package reports

import (
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strconv"
	"strings"

	"github.com/relaybell/relaybell/store"
)

// MaxRecipients bounds a report's recipients.
const MaxRecipients = 20

// Errors of Validate; the API maps each to its code.
var (
	ErrFrequency  = errors.New("frequency must be off, daily, weekly or monthly")
	ErrDay        = errors.New("day must be mon…sun for a weekly report, 1–28 for a monthly one, and absent otherwise")
	ErrHour       = errors.New("hour must be an integer from 0 to 23")
	ErrRecipients = fmt.Errorf("recipients must be at most %d e-mail addresses of members of the account", MaxRecipients)
)

// Weekdays are the days of a weekly report, in the order of time.Weekday.
var Weekdays = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// Validate checks rs against the account's members' addresses and
// returns it normalized: addresses in lower case, each once, in the order
// given; day "" unless weekly or monthly. A member's address matches in
// any letter case.
func Validate(rs store.ReportSettings, members []string) (store.ReportSettings, error) {
	switch rs.Frequency {
	case store.ReportOff, store.ReportDaily:
		if rs.Day != "" {
			return rs, ErrDay
		}
	case store.ReportWeekly:
		if !slices.Contains(Weekdays, rs.Day) {
			return rs, ErrDay
		}
	case store.ReportMonthly:
		n, err := strconv.Atoi(rs.Day)
		if err != nil || n < 1 || n > 28 || strconv.Itoa(n) != rs.Day {
			return rs, ErrDay
		}
	default:
		return rs, ErrFrequency
	}
	if rs.Hour < 0 || rs.Hour > 23 {
		return rs, ErrHour
	}
	if len(rs.Recipients) > MaxRecipients {
		return rs, ErrRecipients
	}
	out := make([]string, 0, len(rs.Recipients))
	for _, r := range rs.Recipients {
		a := strings.ToLower(strings.TrimSpace(r))
		if addr, err := mail.ParseAddress(a); err != nil || addr.Address != a || addr.Name != "" {
			return rs, fmt.Errorf("%w: %q is not an e-mail address", ErrRecipients, r)
		}
		if !isMember(a, members) {
			return rs, fmt.Errorf("%w: %s is not a member of the account", ErrRecipients, a)
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	rs.Recipients = out
	return rs, nil
}

func isMember(addr string, members []string) bool {
	return slices.ContainsFunc(members, func(m string) bool { return strings.EqualFold(m, addr) })
}

// Current keeps of recipients those that are members now, in order: a
// person who left the account is never mailed.
func Current(recipients, members []string) []string {
	var out []string
	for _, r := range recipients {
		if isMember(r, members) && !slices.Contains(out, strings.ToLower(r)) {
			out = append(out, strings.ToLower(r))
		}
	}
	return out
}
