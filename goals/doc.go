// Package goals is what a goal is and how people reach it (issue 32,
// item 4): a goal is an event (any event name) or a label reaching a
// value, with a window in hours.
//
// It owns the definition and its validation (Definition.Check) and the
// Service that records reaches on the API's request path: events.Service
// calls Service.Event for each event of a known person (Config.Goals),
// and the API calls Service.PeopleTagsChanged wherever labels change
// (bulk-tag and import; a browser's registration sets no label).
//
// # Credit
//
// A reach is credited to the send the person received within the goal's
// window before reaching it, by the rule conversions use
// (store.Behavior.LastInteraction): the notification they last clicked,
// else the one last delivered to them, on any of their browsers. Each
// reach is recorded once (store.GoalReach): an event goal's by the event's
// id, so a retried event records nothing more; a tag goal's when the
// person is found with the label's value without having had it
// (store.Goals.ReachTagGoal: who had it when the goal was created or
// changed does not reach it; who loses it and gets it again reaches it
// again). Reaches without a send in the window are recorded too, and
// reported to the caller (a journey's exitOnGoal needs them), but credit
// nothing. A goal's results sum its credited reaches by source: the
// automation the notification was sent for, the journey, else the
// notification itself.
//
// An automation's goalId names the goal it is measured by: the record
// shows it, and its reaches credited to the automation's messages are the
// goal's results of source automation with the automation's id.
//
// # What it must never do
//
// Credit a reach twice, credit a send of another website, or credit a
// send the person received after the window; start a goroutine.
package goals
