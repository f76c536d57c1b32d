-- Version 9: webhooks, their delivery log, the cursor that turns outbox
-- events into deliveries, and the e-mail outbox. The same tables as the
-- SQLite store's 0009_webhooks.sql.

-- A website's receivers of events. events is a JSON array of event names
-- ([] is every event). secret is kept in clear: it keys the signatures.
-- seq only breaks ties of created_at in the newest-first list.
CREATE TABLE webhooks (
	id                   text PRIMARY KEY,
	seq                  bigint GENERATED ALWAYS AS IDENTITY,
	website_id           text NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	url                  text NOT NULL,
	events               json NOT NULL DEFAULT '[]',
	secret               text NOT NULL,
	enabled              boolean NOT NULL,
	last_status          integer,
	last_fired_at        timestamptz,
	consecutive_failures integer NOT NULL DEFAULT 0,
	failing_since        timestamptz,
	disabled_reason      text,
	disabled_at          timestamptz,
	created_at           timestamptz NOT NULL
);

CREATE INDEX webhooks_website ON webhooks (website_id, created_at);

-- One event (or test) for one webhook and the state of its attempts. seq
-- orders the log. event_id is the outbox event's id, NULL for a test; a
-- webhook gets at most one delivery per event. next_attempt_at is set
-- exactly while an attempt waits (pending, retrying): the claim reads the
-- partial index of those, locking with SKIP LOCKED. leased_until is when
-- a claim on the waiting attempt runs out. request_headers is a JSON
-- object.
CREATE TABLE webhook_deliveries (
	seq              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id               text NOT NULL UNIQUE,
	webhook_id       text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
	website_id       text NOT NULL,
	event            text NOT NULL,
	event_id         text,
	body             bytea NOT NULL,
	status           text NOT NULL CHECK (status IN ('pending', 'retrying', 'succeeded', 'failed')),
	attempts         integer NOT NULL DEFAULT 0,
	retries          integer NOT NULL DEFAULT 0,
	one_shot         boolean NOT NULL DEFAULT false,
	last_status_code integer,
	duration_ms      bigint,
	error            text,
	request_headers  json,
	response_body    text,
	created_at       timestamptz NOT NULL,
	last_attempt_at  timestamptz,
	next_attempt_at  timestamptz,
	delivered_at     timestamptz,
	leased_until     timestamptz,
	CHECK ((status IN ('pending', 'retrying')) = (next_attempt_at IS NOT NULL))
);

CREATE UNIQUE INDEX webhook_deliveries_event ON webhook_deliveries (webhook_id, event_id)
	WHERE event_id IS NOT NULL;
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, seq);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, seq)
	WHERE next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);

-- The seq of the last outbox event turned into deliveries: one row, which
-- QueueWebhookDeliveries locks to compare and set it.
CREATE TABLE webhook_cursor (
	id  integer PRIMARY KEY CHECK (id = 1),
	seq bigint NOT NULL
);

INSERT INTO webhook_cursor (id, seq) VALUES (1, 0);

-- Retention deletes the outbox events the cursor has passed by age.
CREATE INDEX webhook_events_created ON webhook_events (created_at);

-- Messages to people, kept until sent; leased_until is when a sender's
-- claim runs out.
CREATE TABLE emails (
	seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id           text NOT NULL UNIQUE,
	recipient    text NOT NULL,
	subject      text NOT NULL,
	body         text NOT NULL,
	created_at   timestamptz NOT NULL,
	sent_at      timestamptz,
	leased_until timestamptz
);

CREATE INDEX emails_created ON emails (created_at, seq);
CREATE INDEX emails_unsent ON emails (created_at, seq) WHERE sent_at IS NULL;
