-- Version 9: webhooks, their delivery log, the cursor that turns outbox
-- events into deliveries, and the e-mail outbox.

-- A website's receivers of events. events is a JSON array of event names
-- ([] is every event). secret is kept in clear: it keys the signatures.
-- seq only breaks ties of created_at in the newest-first list.
CREATE TABLE webhooks (
	seq                  INTEGER PRIMARY KEY,
	id                   TEXT NOT NULL UNIQUE,
	website_id           TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	url                  TEXT NOT NULL,
	events               TEXT NOT NULL DEFAULT '[]',
	secret               TEXT NOT NULL,
	enabled              INTEGER NOT NULL,
	last_status          INTEGER,
	last_fired_at        INTEGER,
	consecutive_failures INTEGER NOT NULL DEFAULT 0,
	failing_since        INTEGER,
	disabled_reason      TEXT,
	disabled_at          INTEGER,
	created_at           INTEGER NOT NULL
);

CREATE INDEX webhooks_website ON webhooks (website_id, created_at);

-- One event (or test) for one webhook and the state of its attempts. seq
-- orders the log (AUTOINCREMENT: never reused, so a page cursor never
-- points at another delivery). event_id is the outbox event's id, NULL for
-- a test; a webhook gets at most one delivery per event. next_attempt_at
-- is set exactly while an attempt waits (pending, retrying): the claim
-- reads the partial index of those. leased_until is when a claim on the
-- waiting attempt runs out. request_headers is a JSON object.
CREATE TABLE webhook_deliveries (
	seq              INTEGER PRIMARY KEY AUTOINCREMENT,
	id               TEXT NOT NULL UNIQUE,
	webhook_id       TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
	website_id       TEXT NOT NULL,
	event            TEXT NOT NULL,
	event_id         TEXT,
	body             BLOB NOT NULL,
	status           TEXT NOT NULL CHECK (status IN ('pending', 'retrying', 'succeeded', 'failed')),
	attempts         INTEGER NOT NULL DEFAULT 0,
	retries          INTEGER NOT NULL DEFAULT 0,
	one_shot         INTEGER NOT NULL DEFAULT 0,
	last_status_code INTEGER,
	duration_ms      INTEGER,
	error            TEXT,
	request_headers  TEXT,
	response_body    TEXT,
	created_at       INTEGER NOT NULL,
	last_attempt_at  INTEGER,
	next_attempt_at  INTEGER,
	delivered_at     INTEGER,
	leased_until     INTEGER,
	CHECK ((status IN ('pending', 'retrying')) = (next_attempt_at IS NOT NULL))
);

CREATE UNIQUE INDEX webhook_deliveries_event ON webhook_deliveries (webhook_id, event_id)
	WHERE event_id IS NOT NULL;
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, seq);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
	WHERE next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);

-- The seq of the last outbox event turned into deliveries: one row.
CREATE TABLE webhook_cursor (
	id  INTEGER PRIMARY KEY CHECK (id = 1),
	seq INTEGER NOT NULL
);

INSERT INTO webhook_cursor (id, seq) VALUES (1, 0);

-- Retention deletes the outbox events the cursor has passed by age.
CREATE INDEX webhook_events_created ON webhook_events (created_at);

-- Messages to people, kept until sent; leased_until is when a sender's
-- claim runs out.
CREATE TABLE emails (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	id           TEXT NOT NULL UNIQUE,
	recipient    TEXT NOT NULL,
	subject      TEXT NOT NULL,
	body         TEXT NOT NULL,
	created_at   INTEGER NOT NULL,
	sent_at      INTEGER,
	leased_until INTEGER
);

CREATE INDEX emails_created ON emails (created_at);
CREATE INDEX emails_unsent ON emails (created_at) WHERE sent_at IS NULL;
