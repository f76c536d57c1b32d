-- Version 5: the webhook outbox.

-- Events to deliver to the websites' webhooks, read in seq order. seq is
-- the rowid: AUTOINCREMENT keeps it strictly increasing and never reused,
-- and with one writer it is also the commit order, so a reader continuing
-- after the last seq it handled misses nothing. data is the event's JSON
-- exactly as it will be sent.
CREATE TABLE webhook_events (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	id         TEXT NOT NULL UNIQUE,
	website_id TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	event      TEXT NOT NULL,
	data       TEXT NOT NULL,
	created_at INTEGER NOT NULL
);

CREATE INDEX webhook_events_website ON webhook_events (website_id, seq);
