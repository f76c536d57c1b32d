-- Version 5: the webhook outbox.

-- Events to deliver to the websites' webhooks, read in seq order. seq is
-- an identity column, strictly increasing and never reused; the store takes
-- an advisory lock before inserting (lockOutbox), so events also commit in
-- seq order and a reader continuing after the last seq it handled misses
-- nothing. data is json, not jsonb: the event's JSON kept byte for byte as it
-- will be sent (jsonb would reorder its keys).
CREATE TABLE webhook_events (
	seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id         text NOT NULL UNIQUE,
	website_id text NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	event      text NOT NULL,
	data       json NOT NULL,
	created_at timestamptz NOT NULL
);

CREATE INDEX webhook_events_website ON webhook_events (website_id, seq);
