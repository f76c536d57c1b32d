-- Version 8: sends in waves (per time zone, smart time, A/B auto-winner)
-- and the activity that smart time learns from.

-- waves: how many rows of notification_waves the send has (0: it goes
-- out at once, in one); the send is sent once waves * 64 shard tasks are
-- done (64 when waves is 0). ab_winner: the variant an auto-winner send
-- gives the rest of its audience.
ALTER TABLE notifications ADD COLUMN waves integer NOT NULL DEFAULT 0;
ALTER TABLE notifications ADD COLUMN ab_winner text NOT NULL DEFAULT '';

-- One row per wave, published by the outbox sweep once due: leased_until
-- keeps two sweepers from publishing the same wave at once, published_at
-- ends it.
CREATE TABLE notification_waves (
	notification_id text NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
	wave            integer NOT NULL,
	due_at          timestamptz NOT NULL,
	leased_until    timestamptz,
	published_at    timestamptz,
	PRIMARY KEY (notification_id, wave)
);

CREATE INDEX notification_waves_due ON notification_waves (due_at) WHERE published_at IS NULL;

-- Visits and clicks per local hour of a subscriber; smart_hour is the hour
-- with the most weight, kept on the subscriber so that fan-out reads it
-- with the audience.
CREATE TABLE subscriber_activity (
	subscriber_id text NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	hour          integer NOT NULL,
	weight        integer NOT NULL,
	PRIMARY KEY (subscriber_id, hour)
);

ALTER TABLE subscribers ADD COLUMN smart_hour integer;
