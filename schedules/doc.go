// Package schedules owns recurring schedules (issue 35, part 3): a
// website's send that goes out again and again by a rule, each occurrence
// exactly once.
//
// # Rules
//
// A schedule's rule is an RFC 5545 RRULE of this subset, in a time zone
// (the schedule's timezone, an IANA name; the website's by default):
//
//   - FREQ (required): DAILY, WEEKLY or MONTHLY.
//   - INTERVAL: every n days, weeks (Monday to Sunday) or months, counted
//     from the day, week or month of startsAt (else of the schedule's
//     creation); 1 to 1000, default 1.
//   - BYDAY: days of the week, MO TU WE TH FR SA SU, comma-separated;
//     required with WEEKLY. With MONTHLY a day may be numbered: 1MO is the
//     month's first Monday, -1FR its last Friday (1 to 5, -1 to -5).
//   - BYMONTHDAY: days of the month, 1 to 31 or -1 (the last) to -31; a
//     month without that day is passed over. Not with WEEKLY. MONTHLY
//     needs BYMONTHDAY or BYDAY (both given: days that match both).
//   - BYHOUR (required) and BYMINUTE (default 0): the wall-clock times of
//     each day it sends on, every hour with every minute.
//
// Keys are read in any case, an "RRULE:" prefix is allowed, and anything
// else (COUNT, UNTIL, DTSTART, BYSETPOS, ...) is refused with
// invalid_rule naming it: a schedule ends with endsAt and starts with
// startsAt. Examples: every day at 09:00 "FREQ=DAILY;BYHOUR=9"; weekdays
// at 08:30 and 17:30 "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8,17;BYMINUTE=30";
// the first Monday of each quarter at 10:00
// "FREQ=MONTHLY;INTERVAL=3;BYDAY=1MO;BYHOUR=10".
//
// # Time zones and clock changes
//
// Occurrences are wall-clock times in the schedule's zone (WallTime):
// 09:00 daily is 09:00 local on both sides of a change; a time a change
// skips (02:30 when clocks jump from 02:00 to 03:00) goes at the jump,
// 03:00; a time that happens twice (01:30 when clocks go back from 02:00
// to 01:00) goes once, at its first reading. With perTimezone each
// occurrence is a per-time-zone send (notification.WavePlan): it starts at
// the occurrence and each browser gets it when its own clock next reads
// the occurrence's wall time, within 24 hours, as POST /notifications with
// perTimezone and localTime does.
//
// # Exactly once
//
// The store keeps each schedule's next occurrence (next_at). The Engine, a
// module of the composition root that any number of nodes run, claims due
// schedules under a lease (store.ClaimSchedules) and does each occurrence
// with store.FireSchedule: one transaction moves next_at on (the claim
// that counts), takes the website's broadcast budget, writes the ledger
// row keyed by (schedule, occurrence) and stores the notification. A node
// killed at any moment leaves either all of it or none, and the lease
// running out lets another node redo what is not done.
//
// # Late occurrences and the budget
//
// An occurrence found less than catchUpMinutes (default 60) after its
// time goes late, once. One found later, after an outage, is skipped: its
// ledger row says skipped, and the schedule's history shows it. An
// occurrence the website's hourly broadcast budget (spec 8.1) has no room
// for is refused: the refusal is recorded on the schedule and the
// occurrence goes at the start of the next hour with room, however late
// (catch-up does not skip it), and the occurrences that came due while it
// waited follow it in order.
//
// A change to a schedule (PUT) computes its next occurrence from now,
// except that one waiting for the budget stays and goes first. Pausing
// drops what was due; occurrences while paused are not sent.
//
// Each occurrence's send is what POST /notifications would store for it:
// notification.Prepare with the website's defaults and quiet hours, the
// template applied first (Templates; nil refuses a templateId), held for
// review when it is a new account's first large broadcast (package
// review, the API's rule). A send that no longer passes its checks (its
// template is gone) pauses the schedule with the reason; a deleted topic
// pauses the schedules on it, with a schedule.paused webhook event, in the
// same transaction (store.DeleteTopic). The ledger
// is kept HistoryKept (Purger).
//
// It never sends to everyone by default: a schedule's audience
// (notification.Audience, the feeds' type too) names everyone, a topic, a
// segment or filters. It never reads or writes
// another website's data.
package schedules
