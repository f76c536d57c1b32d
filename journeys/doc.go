// Package journeys is what a journey is and does (issue 32, items 2, 3
// and 5): an entry (an automation trigger, or the API), a reentry rule,
// exit events, a goal, and a graph of steps (send, wait, wait_until,
// window, split, condition, set_tags, exit) that each enrolled person
// walks.
//
// It owns the definition and its validation (Definition.Check: the
// entry is checked by automations.CheckTrigger, a send's content by
// notification.Prepare, the graph as a whole here: references, cycles
// with no wait, split weights, delivered/clicked naming a send that comes
// before on every path), the Service that enrols people and moves their
// enrolments on as events, browsers, pings and API calls arrive (on the
// API nodes, on the request's path), and the Engine, the handler of
// journey timers that the automations' claim loop calls.
//
// # Versions
//
// A journey's definition is versioned in the store: a change after
// anyone entered the current version is a new one, and each enrolment
// reads the version it is pinned to, so its pending steps never change
// under it. Migrate moves live enrolments to the current version
// explicitly, each at its mapped step (run afresh).
//
// # Engine
//
// An enrolment is a state machine: its current step, whether it waits
// there, and a tick counting its moves. Its timer is a row of the
// automations' timers table (kind store.TimerJourney, run the enrolment,
// item its tick), claimed under a lease by the one claim loop
// (automations.Engine with Config.Kinds), FOR UPDATE SKIP LOCKED on
// PostgreSQL. Firing it plans the run from the current step until a step
// must wait or the enrolment ends (send, set_tags, split, condition and
// exit run at once; wait, wait_until and window write the next timer)
// and makes it with one store.MoveEnrollment: one transaction that
// deletes the claimed timer (gone: another node did it, nothing
// happens), checks the enrolment is still live at the tick it was
// planned from, writes the history rows (the ledger, keyed by
// (enrolment, seq)) with the sends' notifications, sets the labels, moves
// the enrolment and writes its next timer. A node killed at any moment
// leaves all of it or none; the timer comes back when its lease runs out,
// and the redo plans the same steps (a split's branch is a hash of
// (enrolment, step)). Events, pings, the API and goals move enrolments
// with the same transaction, planned from the tick they read, so a
// concurrent move makes theirs a no-op and they read again.
//
// A claimed batch (the claim loop's Batch, 100 by default) is fired
// together (Engine.FireTimers): each timer's move is planned as above,
// the journey versions' definitions and the website read once a batch,
// and the moves are made by one store.MoveEnrollments, each as
// MoveEnrollment makes it, all in one transaction, in enrolment id order:
// one commit for the batch, where a commit per step made most of the
// store's time per step on SQLite. Exactly-once is the same: each timer's
// DELETE, its history rows (the ledger) and its sends commit together,
// and a redo finds the timer gone. Should the batch's transaction fail (a
// deadlock with another move of one of its enrolments on PostgreSQL, one
// bad move), none of it stands and the engine makes each move in its own
// MoveEnrollment, so one enrolment does not hold the rest back (a move
// the failed batch made is not there any more; the redo of one already
// made finds its timer gone). A timer whose plan fails (a read fails)
// stops the batch there: those planned before it fire, it and the rest
// stay leased until their lease runs out.
//
// A send step is a notification with automation true, journey_id and
// journey_step set and no send body, whose target names the one
// subscriber; quiet hours hold it (notification.Prepare) and fan-out
// applies the frequency cap, unless the step is transactional. Per-step
// figures come from the history and the notifications' counters.
//
// # Where it runs and how it scales
//
// The Service runs on the API nodes. The Engine is part of the engine
// module of the fan-out role (package server), the same claim loop as the
// automations': each fan-out node claims batches with SKIP LOCKED, so
// adding fan-out nodes adds engines sharing the due timers without
// waiting on each other; memory is one batch whatever the number of
// waiting enrolments. The loop wakes at the earliest due timer, after
// its poll (1s), or at once when an enrolment starts or moves in its
// process. Embedded, 10,000 steps due over 10 s with 1,010,000
// enrolments waiting, on a shared 2-core machine (README, the journeys
// timers table): history rows late 15ms / 74ms / 108ms (p50/p99/max)
// and 1.5 ms of the process's CPU per step with the batch in one
// transaction, where a commit per step left them seconds late
// (4.4s / 9.0s with 20,000 waiting, same session); the pushes, about
// 520-620 a second there, are what lag.
//
// # What it must never do
//
// Send a step to anyone but the enrolled person; run a step twice; let
// a person have two live enrolments in one journey (the store's partial
// unique index holds it); change a live enrolment's steps under it
// (versions); start a goroutine of its own.
//
// # Lock order
//
// On PostgreSQL, MoveEnrollment deletes the timer (its row lock), then
// locks the enrolment's row, then the person's subscriber row (labels),
// then deletes and inserts the enrolment's timers. Enroll locks the
// journey's row FOR SHARE and inserts; UpdateJourney updates the
// journey's row first. MigrateEnrollments locks enrolment rows in id
// order, then their timers. No transaction takes a timer after the
// enrolment's row but the enrolment's own, and those are only reached
// through the enrolment's lock, so they never wait crosswise.
// MoveEnrollments takes each move's locks in that order, one move after
// the other (enrolment id order), holding those of the moves before: two
// engines' batches never share a timer (SKIP LOCKED, leases), but a
// concurrent move of one of the batch's enrolments, or of a person it
// holds (two journeys of one person), may wait crosswise with it; PostgreSQL
// then fails one of them, and a failed batch is moved one enrolment at a
// time, in MoveEnrollment's order.
//
// # Segment entry
//
// A segment_entered journey is a watcher of its segment, as a
// segment_entered automation is: Service.SegmentWatches lists the active
// ones for automations.Segments, the one evaluation of both kinds, which
// the API calls for the people a new browser, a label change or an
// import touched, and the engine for the person a set_tags step changed.
// Each person is read once, checked against each watcher's segment and
// recorded in or out under the watcher's id (store.SegmentMembers); one
// found in without being recorded enrols (Enroll: a live enrolment or the
// reentry rule refuses, as for any entry). WatchSegment seeds the rows
// when the journey starts watching (created, its segment changed, made
// active again), so those in the segment already do not enrol; nothing
// rescans the website after that.
//
// # Labels a step sets
//
// set_tags writes the labels in the move's transaction. Once it has
// committed, the Engine tells its TagsSet hook (LabelsChanged, from the
// composition root), which does what a label change through the API
// does: segment entry evaluated, then tag goals reached, whose Reached
// hook ends the enrolments that exit on them. It runs after the commit,
// never inside it, so those moves keep their own transactions and lock
// order. A node that dies between the commit and the hook has set the
// labels without evaluating them, and nothing retries it (the timer went
// with the move): the person's next evaluation (a label change, an
// import; for segments also a registration, which the SDK makes on every
// page view) finds the same state and does it then, late, unless the
// labels changed back meanwhile. The membership rows make an evaluation
// done twice enter nobody twice.
//
// # Migration
//
// Migrate checks the mapping names steps of the current version; the
// store checks each live enrolment's step is mapped in the transaction
// that moves them (store.UnmappedStepError), so an enrolment the engine
// moves on between the request's reads and that transaction is refused
// like any other, and nothing moves.
//
// Pausing a journey stops entries; enrolments in progress go on.
package journeys
