-- Version 22: journeys, their versions, enrolments and their history
-- (store.Journeys). A journey's timers are rows of the automations'
-- timers table of kind 'journey' (run_id the enrolment, item its tick),
-- claimed by the same loop.
--
-- journeys: a website's journeys; version is the current one, whose
-- definition journey_versions keeps.
CREATE TABLE journeys (
	id         TEXT PRIMARY KEY,
	website_id TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name       TEXT NOT NULL,
	status     TEXT NOT NULL CHECK (status IN ('draft', 'active', 'paused')),
	entry_type TEXT NOT NULL,
	version    INTEGER NOT NULL,
	created_at {{.Time}} NOT NULL,
	updated_at {{.Time}} NOT NULL
);
CREATE INDEX journeys_website ON journeys (website_id, created_at);

-- journey_versions: every version's definition (entry, reentry, exit
-- events, goal, steps), the JSON the journeys package reads. Enrolments
-- read the version they are pinned to.
CREATE TABLE journey_versions (
	journey_id TEXT NOT NULL REFERENCES journeys (id) ON DELETE CASCADE,
	version    INTEGER NOT NULL,
	definition {{.JSON}} NOT NULL,
	created_at {{.Time}} NOT NULL,
	PRIMARY KEY (journey_id, version)
){{.WithoutRowid}};

-- enrollments: a person's passes through a journey. At most one per
-- person and journey is live (state active): the partial unique index
-- holds it whatever runs concurrently. tick counts the enrolment's moves
-- (a move names the tick it was planned from); seq counts its history.
CREATE TABLE enrollments (
	id            TEXT PRIMARY KEY,
	website_id    TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	journey_id    TEXT NOT NULL REFERENCES journeys (id) ON DELETE CASCADE,
	subscriber_id TEXT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	version       INTEGER NOT NULL,
	state         TEXT NOT NULL CHECK (state IN ('active', 'completed', 'exited', 'goal_reached')),
	current_step  TEXT NOT NULL,
	waiting       {{.Bool}} NOT NULL DEFAULT {{.False}},
	seq           INTEGER NOT NULL DEFAULT 0,
	tick          INTEGER NOT NULL DEFAULT 0,
	entered_at    {{.Time}} NOT NULL,
	updated_at    {{.Time}} NOT NULL,
	ended_at      {{.Time}}
);
CREATE UNIQUE INDEX enrollments_live ON enrollments (journey_id, subscriber_id) WHERE state = 'active';
CREATE INDEX enrollments_person ON enrollments (subscriber_id, entered_at);
CREATE INDEX enrollments_journey ON enrollments (journey_id, version, state);

-- journey_history: each step an enrolment took, when and why; the
-- engine's ledger, keyed by (enrolment, seq) and written in the
-- transaction that stores the step's notification, so a step is done
-- once whatever crashes. early marks the row that ended the enrolment
-- before its journey's end.
CREATE TABLE journey_history (
	enrollment_id   TEXT NOT NULL REFERENCES enrollments (id) ON DELETE CASCADE,
	seq             INTEGER NOT NULL,
	journey_id      TEXT NOT NULL,
	step_id         TEXT NOT NULL,
	type            TEXT NOT NULL,
	outcome         TEXT NOT NULL,
	early           {{.Bool}} NOT NULL DEFAULT {{.False}},
	notification_id TEXT,
	at              {{.Time}} NOT NULL,
	PRIMARY KEY (enrollment_id, seq)
){{.WithoutRowid}};
CREATE INDEX journey_history_step ON journey_history (journey_id, step_id);
CREATE INDEX journey_history_send ON journey_history (notification_id) WHERE notification_id IS NOT NULL;

-- The journey and step a notification was sent for: per-step figures
-- come from the notifications' counters.
ALTER TABLE notifications ADD COLUMN journey_id TEXT;
ALTER TABLE notifications ADD COLUMN journey_step TEXT;
CREATE INDEX notifications_journey ON notifications (journey_id, journey_step) WHERE journey_id IS NOT NULL;
