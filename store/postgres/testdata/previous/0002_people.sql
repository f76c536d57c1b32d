-- Version 2: segment, topic and audience management.

-- When a browser first subscribed; NULL for people imported before any.
ALTER TABLE subscribers ADD COLUMN consent_at timestamptz;
UPDATE subscribers s SET consent_at = (SELECT min(created_at) FROM endpoints e WHERE e.subscriber_id = s.id);

-- The audience list and export walk people newest first.
CREATE INDEX subscribers_newest ON subscribers (website_id, created_at, id);

-- Which saved segments a send includes or excludes (segment_in_use, last send).
CREATE TABLE notification_segments (
	segment_id      text NOT NULL,
	notification_id text NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
	PRIMARY KEY (segment_id, notification_id)
);

CREATE INDEX notification_segments_notification ON notification_segments (notification_id);
