-- Version 29: recurring schedules (issue 35, part 3; store.Schedules) and
-- the origin of the notifications they send.
--
-- schedules: a website's recurring schedules. definition is the JSON the
-- schedules package reads (audience, content or templateId, rule, time
-- zone, perTimezone, catchUpMinutes, startsAt, endsAt); the store keeps it
-- as written. topic_id, segment_id and exclude_segment_id repeat the
-- audience's, so that a topic's deletion pauses the schedules on it and a
-- segment's deletion counts them (segment_in_use); template_id repeats
-- the definition's, for what uses a template (template_in_use). next_at is the next
-- occurrence not done (NULL: none, the schedule ended or is paused);
-- due_at is when the engine looks at it (next_at, or the next hour once
-- the broadcast budget refused it); budget_wait says the occurrence at
-- next_at waits for the budget, so catch-up never skips it; leased_until
-- is an engine's claim.
CREATE TABLE schedules (
	id                 TEXT PRIMARY KEY,
	website_id         TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name               TEXT NOT NULL,
	status             TEXT NOT NULL CHECK (status IN ('active', 'paused')),
	paused_reason      TEXT NOT NULL DEFAULT '',
	definition         {{.JSON}} NOT NULL,
	topic_id           TEXT,
	segment_id         TEXT,
	exclude_segment_id TEXT,
	template_id        TEXT,
	next_at            {{.Time}},
	due_at             {{.Time}},
	budget_wait        {{.Bool}} NOT NULL DEFAULT {{.False}},
	leased_until       {{.Time}},
	refused_at         {{.Time}},
	refused_occurrence {{.Time}},
	refusal            TEXT NOT NULL DEFAULT '',
	created_at         {{.Time}} NOT NULL,
	updated_at         {{.Time}} NOT NULL
);
CREATE INDEX schedules_website ON schedules (website_id, created_at);
CREATE INDEX schedules_due ON schedules (due_at) WHERE status = 'active' AND due_at IS NOT NULL;
CREATE INDEX schedules_topic ON schedules (topic_id) WHERE topic_id IS NOT NULL;
CREATE INDEX schedules_template ON schedules (template_id) WHERE template_id IS NOT NULL;

-- schedule_runs: the ledger, one row per (schedule, occurrence), written
-- in the transaction that stores the occurrence's notification (outcome
-- sent) or records it skipped (missed by more than catchUpMinutes). The
-- key is what makes an occurrence go once.
CREATE TABLE schedule_runs (
	schedule_id     TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
	occurrence      {{.Time}} NOT NULL,
	outcome         TEXT NOT NULL CHECK (outcome IN ('sent', 'skipped')),
	notification_id TEXT,
	at              {{.Time}} NOT NULL,
	PRIMARY KEY (schedule_id, occurrence)
){{.WithoutRowid}};

-- The schedule that sent a notification ("" for any other).
ALTER TABLE notifications ADD COLUMN schedule_id TEXT;
CREATE INDEX notifications_schedule ON notifications (schedule_id, seq) WHERE schedule_id IS NOT NULL;
