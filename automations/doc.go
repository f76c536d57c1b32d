// Package automations is what an automation is and does (issue 32, item
// 1): a trigger (an event with conditions on its properties, a new
// browser subscription, a topic opt-in, a segment entered), stop events,
// and 1 to 10 messages each sent a delay after the trigger to the person
// who triggered it.
//
// It owns the definition and its validation (Definition.Check: a
// message's content is validated by notification.Prepare, as a send's),
// the conditions (Matches), the Service that starts and stops runs as
// events, subscriptions and opt-ins arrive (on the API nodes, on the
// request's path), and the Engine that sends the messages when they come
// due.
//
// An automation may name a goal (Definition.GoalID, a goal of the
// website when the body names it): the goal's reaches credited to the
// automation's messages are its results of source automation (package
// goals).
//
// # Engine
//
// A run is a person's pass through an automation: one timer per message
// in the store (store.Automations), due at the trigger plus the message's
// delay. Engines on any number of nodes claim due timers under a lease
// (ClaimTimers: FOR UPDATE SKIP LOCKED on PostgreSQL, SQLite's one
// writer), and fire them with FireTimers: one transaction that deletes
// the batch's timers, writes their ledger rows keyed by (run, item) and
// stores their messages' notifications, a statement each for the batch
// (a capped message, which counts the person's ledger under a lock, has
// a FireTimer transaction of its own). A node killed at any moment leaves
// either nothing (the timers come back when their lease runs out) or all
// of it, so each message is stored once; the ledger's unique key makes a
// redo a no-op even so. The notification is then dispatched like any send, and
// the outbox sweep re-drives it if the node died before. A stop event or
// a restart deletes the timers in its own transaction: a timer being
// fired at that moment is fired first or never.
//
// A message is a notification with automation true, its automation_id
// and no send body, whose target names the one subscriber
// (notification.Target.SubscriberID, read only through audience's one
// path; a node that does not know it refuses the target, so it never
// widens). Quiet hours hold it (notification.Prepare schedules it) and
// fan-out applies the website's frequency cap, unless the automation is
// transactional; the automation's own caps (per person, per day and week)
// are counted from the ledger in FireTimer's transaction.
//
// # Segment entry
//
// segment_entered is evaluated as people change, never by rescanning the
// website, for automations and journeys alike: Segments (segments.go) is
// the one evaluation, over Watchers (this package's Service for
// automations, the journeys' Service for journeys). The API calls
// Segments.PeopleChanged for the people a new browser, a label change or
// an import touched, and the engine for the person a journey's set_tags
// step changed; it reads each person once, checks them against the
// segment of each active watcher of the website (audience.Selector) and
// records who is in each under the watcher's id
// (store.SegmentMembers.SetSegmentMember): a person found in a segment
// without being recorded in it enters (Watch.Enter: a run starts, a
// journey enrols). SeedSegment reads the segment's people once when a
// watcher starts watching it (created, its segment changed, made active
// again: StartsWatching), so that those already in do not enter. Events
// change nothing a segment reads (country, language, url, external id,
// labels), so they are not evaluated.
//
// # Subscribed and topic opt-in triggers
//
// A new browser and a topic opt-in (by a browser or by an import) are
// stored with their trigger, in the registration's or the import's
// transaction (store.PendingTrigger, only while the website has an active
// automation of that type). Service.Pending then starts the runs and
// removes the trigger. A request that dies between the two leaves the
// trigger for the person's next registration (the SDK registers on every
// page view) or the next import; the runs' ids derive from the trigger's,
// so a trigger done twice starts each run once
// (TriggerAutomation does nothing for the person's current run id).
//
// Timers are generic due items (store.Timer.Kind): a journey's step is
// another kind fired by the same claim loop.
//
// # Where it runs
//
// The Engine is a module of the fan-out role (package server), beside the
// other background deliveries (outbox sweep, webhooks): it makes sends,
// and fan-out nodes are the ones that scale with sending. Each engine
// claims batches with SKIP LOCKED, so adding fan-out nodes adds engines
// that share the due timers without waiting on each other; memory is one
// batch, whatever the number of waiting runs. An engine wakes at the
// earliest due timer or after Config.Poll (1s), and at once when a run
// starts in its process (Service.Wakes), so a due message goes out within
// about a second in the cluster, and at once on the embedded default.
// A fan-out node on PostgreSQL runs four engines (server's engineLoops),
// whose transactions overlap; its messages are published from a pool
// (bus.DispatchPool), so firing does not wait for each publish. A node
// killed with SIGKILL holding a batch delays it by the lease (5s):
// deploy's TestEngineSurvivesSIGKILL kills the fan-out nodes six times
// while people go through three messages, and checks each got
// each exactly once; `relaybell bench --timers` measures memory,
// lateness and store CPU with a million runs waiting.
//
// # What it must never do
//
// Send a message to anyone but the person whose run it is; send a
// message twice; send for an automation that is not active (a due timer
// of a paused or draft automation is skipped, and recorded so); start a
// goroutine of its own (Run is started by the composition root).
//
// # Lock order
//
// On PostgreSQL: TriggerAutomation locks the person's automation_runs
// row, then the run's timers (deleting them), then the person's shard of
// the automation's run counts (automation_counts: the counts are spread
// over shards picked by the person, so the triggers of a popular
// automation do not all wait for one row). StopAutomations deletes timers
// (locking them), then updates count shards, in automation id order.
// FireTimer of a capped message locks the person's automation_runs row
// first (so two messages of one person due at the same instant on two
// nodes count the caps one after the other), then deletes the timer (its
// row lock), reads the ledger, inserts the ledger row and the
// notification. A run's row is always locked before its timers, timers
// before count shards, and no transaction takes a run's row after its
// timers, so they never wait crosswise.
package automations
