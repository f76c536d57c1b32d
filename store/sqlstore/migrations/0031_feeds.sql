-- Version 31: RSS, Atom and JSON feeds that send their new items (issue 35,
-- part 2; store.Feeds), and the origin of a feed's sends.
--
-- feeds: a website's feeds. audience and template are the JSON the feeds
-- package reads; topic_id, segment_id and exclude_segment_id repeat the
-- audience's, template_id the template's, for the uses of a topic, segment
-- or saved template. The poller claims due
-- feeds (next_poll_at) under a lease (leased_until). etag and
-- last_modified make the next fetch conditional; seeded is set once the
-- first fetch recorded the items present. failing_since is the first
-- failed poll since the last success; last_poll_* the last poll's outcome;
-- budget_refused_at the last send the broadcast budget refused.
CREATE TABLE feeds (
	id                 TEXT PRIMARY KEY,
	website_id         TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name               TEXT NOT NULL,
	url                TEXT NOT NULL,
	audience           {{.JSON}} NOT NULL,
	template           {{.JSON}} NOT NULL,
	status             TEXT NOT NULL CHECK (status IN ('active', 'paused')),
	paused_reason      TEXT,
	poll_minutes       INTEGER NOT NULL,
	max_per_poll       INTEGER NOT NULL,
	send_existing      INTEGER NOT NULL DEFAULT 0,
	topic_id           TEXT,
	segment_id         TEXT,
	exclude_segment_id TEXT,
	template_id        TEXT,
	etag               TEXT,
	last_modified      TEXT,
	seeded             {{.Bool}} NOT NULL DEFAULT {{.False}},
	next_poll_at       {{.Time}} NOT NULL,
	leased_until       {{.Time}},
	failing_since      {{.Time}},
	last_poll_at       {{.Time}},
	last_poll_status   INTEGER,
	last_poll_new      INTEGER,
	last_poll_error    TEXT,
	budget_refused_at  {{.Time}},
	created_at         {{.Time}} NOT NULL,
	updated_at         {{.Time}} NOT NULL
);
CREATE INDEX feeds_website ON feeds (website_id, created_at);
CREATE INDEX feeds_due ON feeds (next_poll_at) WHERE status = 'active';
CREATE INDEX feeds_topic ON feeds (topic_id) WHERE topic_id IS NOT NULL;
CREATE INDEX feeds_template ON feeds (template_id) WHERE template_id IS NOT NULL;

-- feed_items: the ledger, one row per (feed, item) ever seen, keyed by the
-- item's GUID, else its link. status is seen (present when the feed was
-- added, never sent), pending (to send) or
-- sent (notification_id is its send, written in the same transaction).
-- data is what the feeds package keeps of a pending item to send it.
-- A row is never removed while its feed lives, so an edited, reordered or
-- re-added item is never sent again.
CREATE TABLE feed_items (
	feed_id         TEXT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
	item_key        TEXT NOT NULL,
	status          TEXT NOT NULL CHECK (status IN ('seen', 'pending', 'sent')),
	ord             INTEGER NOT NULL,
	data            {{.JSON}},
	notification_id TEXT,
	seen_at         {{.Time}} NOT NULL,
	sent_at         {{.Time}},
	PRIMARY KEY (feed_id, item_key)
){{.WithoutRowid}};
CREATE INDEX feed_items_pending ON feed_items (feed_id, seen_at, ord) WHERE status = 'pending';

ALTER TABLE notifications ADD COLUMN feed_id TEXT;
CREATE INDEX notifications_feed ON notifications (website_id, feed_id, seq) WHERE feed_id IS NOT NULL;
