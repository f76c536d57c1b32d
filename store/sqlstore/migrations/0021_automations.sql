-- Version 21: automations and the engine's durable state (store.Automations).
--
-- automations: a website's automations; the definition (trigger, stop
-- events, messages, caps) is the JSON the automations package reads, the
-- store keeps it as written. triggered and stopped count runs started or
-- restarted and runs ended by a stop event.
CREATE TABLE automations (
	id           TEXT PRIMARY KEY,
	website_id   TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name         TEXT NOT NULL,
	status       TEXT NOT NULL CHECK (status IN ('draft', 'active', 'paused')),
	trigger_type TEXT NOT NULL,
	definition   {{.JSON}} NOT NULL,
	triggered    {{.Bigint}} NOT NULL DEFAULT 0,
	stopped      {{.Bigint}} NOT NULL DEFAULT 0,
	created_at   {{.Time}} NOT NULL,
	updated_at   {{.Time}} NOT NULL
);
CREATE INDEX automations_website ON automations (website_id, created_at);

-- automation_runs: a person's current run of an automation, one row per
-- (automation, person). The row is what concurrent triggers for the same
-- person lock; the run is pending while it has timers.
CREATE TABLE automation_runs (
	automation_id TEXT NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
	subscriber_id TEXT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	run_id        TEXT NOT NULL,
	started_at    {{.Time}} NOT NULL,
	PRIMARY KEY (automation_id, subscriber_id)
){{.WithoutRowid}};

-- automation_segment_members: who is in the segment of a segment_entered
-- automation, as last evaluated: a person enters when a change of theirs
-- finds them in it without a row here. Seeded with the segment's members
-- when the automation starts watching it.
CREATE TABLE automation_segment_members (
	automation_id TEXT NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
	subscriber_id TEXT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	PRIMARY KEY (automation_id, subscriber_id)
){{.WithoutRowid}};

-- timers: the engine's due items, one per (run, item), claimed under a
-- lease (leased_until) by any node. kind says what fires: 'automation' (a
-- message of an automation's run); journeys' steps are another kind.
CREATE TABLE timers (
	run_id        TEXT NOT NULL,
	item          INTEGER NOT NULL,
	kind          TEXT NOT NULL,
	website_id    TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	automation_id TEXT REFERENCES automations (id) ON DELETE CASCADE,
	subscriber_id TEXT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	due_at        {{.Time}} NOT NULL,
	leased_until  {{.Time}},
	PRIMARY KEY (run_id, item)
){{.WithoutRowid}};
CREATE INDEX timers_due ON timers (due_at);
CREATE INDEX timers_person ON timers (automation_id, subscriber_id);

-- ledger: what each fired item did, keyed by (run, item) and written in
-- the transaction that removes its timer and stores its notification, so
-- an item is done once whatever crashes. outcome: sent (notification_id
-- names the send), capped (the automation's caps held it back), skipped
-- (the automation was no longer active, or has no such message now).
CREATE TABLE ledger (
	run_id          TEXT NOT NULL,
	item            INTEGER NOT NULL,
	automation_id   TEXT REFERENCES automations (id) ON DELETE CASCADE,
	subscriber_id   TEXT NOT NULL,
	notification_id TEXT,
	outcome         TEXT NOT NULL,
	at              {{.Time}} NOT NULL,
	PRIMARY KEY (run_id, item)
){{.WithoutRowid}};
CREATE INDEX ledger_person ON ledger (automation_id, subscriber_id, at);

-- The automation a notification was sent for (spec 2.3 automation_id).
ALTER TABLE notifications ADD COLUMN automation_id TEXT;
CREATE INDEX notifications_automation ON notifications (automation_id) WHERE automation_id IS NOT NULL;
