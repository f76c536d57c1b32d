-- RelayBell metadata schema, version 1.
-- Times are unix milliseconds (INTEGER, UTC); JSON is stored as TEXT, opaque
-- API documents (notification content, target, send body) as BLOB.

CREATE TABLE accounts (
	id             TEXT PRIMARY KEY,
	owner_email    TEXT NOT NULL,
	email_verified INTEGER NOT NULL DEFAULT 0,
	suspended      INTEGER NOT NULL DEFAULT 0,
	created_at     INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE websites (
	id                TEXT PRIMARY KEY,
	account_id        TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	project_id        TEXT NOT NULL UNIQUE,
	name              TEXT NOT NULL,
	url               TEXT NOT NULL,
	timezone          TEXT NOT NULL,
	vapid_public_key  TEXT NOT NULL,
	vapid_private_key TEXT NOT NULL,
	settings          TEXT NOT NULL DEFAULT '{}',
	created_at        INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX websites_account ON websites (account_id);

CREATE TABLE api_keys (
	id           TEXT PRIMARY KEY,
	website_id   TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name         TEXT NOT NULL,
	prefix       TEXT NOT NULL,
	hash         TEXT NOT NULL UNIQUE,
	scopes       TEXT NOT NULL DEFAULT '[]',
	expires_at   INTEGER,
	created_at   INTEGER NOT NULL,
	last_used_at INTEGER,
	revoked_at   INTEGER
) WITHOUT ROWID;

CREATE INDEX api_keys_website ON api_keys (website_id);

CREATE TABLE subscribers (
	id              TEXT PRIMARY KEY,
	website_id      TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	external_id     TEXT,
	country         TEXT NOT NULL DEFAULT '',
	language        TEXT NOT NULL DEFAULT '',
	timezone        TEXT NOT NULL DEFAULT '',
	url             TEXT NOT NULL DEFAULT '',
	tags            TEXT NOT NULL DEFAULT '{}',
	shard           INTEGER NOT NULL,
	created_at      INTEGER NOT NULL,
	last_seen_at    INTEGER NOT NULL,
	unsubscribed_at INTEGER
) WITHOUT ROWID;

CREATE UNIQUE INDEX subscribers_external_id ON subscribers (website_id, external_id)
	WHERE external_id IS NOT NULL;
CREATE INDEX subscribers_website_shard ON subscribers (website_id, shard);

-- Clustered by (website_id, shard, id): a page of a shard's audience is one
-- sequential range of the table instead of a random row lookup per endpoint,
-- a fifth less time for the hottest read (BenchmarkAudience/all-unclustered).
CREATE TABLE endpoints (
	website_id    TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	shard         INTEGER NOT NULL, -- the subscriber's
	id            TEXT NOT NULL,
	subscriber_id TEXT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	url           TEXT NOT NULL,
	p256dh        TEXT NOT NULL,
	auth          TEXT NOT NULL,
	device        TEXT NOT NULL DEFAULT '',
	user_agent    TEXT NOT NULL DEFAULT '',
	created_at    INTEGER NOT NULL,
	last_seen_at  INTEGER NOT NULL,
	PRIMARY KEY (website_id, shard, id)
) WITHOUT ROWID;

CREATE UNIQUE INDEX endpoints_id ON endpoints (id);
CREATE UNIQUE INDEX endpoints_url ON endpoints (website_id, url);
CREATE INDEX endpoints_subscriber ON endpoints (subscriber_id);

CREATE TABLE topics (
	id         TEXT PRIMARY KEY,
	website_id TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name       TEXT NOT NULL,
	slug       TEXT NOT NULL COLLATE NOCASE,
	created_at INTEGER NOT NULL,
	UNIQUE (website_id, slug)
) WITHOUT ROWID;

CREATE TABLE topic_optins (
	topic_id      TEXT NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
	subscriber_id TEXT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	created_at    INTEGER NOT NULL,
	PRIMARY KEY (topic_id, subscriber_id)
) WITHOUT ROWID;

CREATE INDEX topic_optins_subscriber ON topic_optins (subscriber_id);

CREATE TABLE segments (
	id         TEXT PRIMARY KEY,
	website_id TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name       TEXT NOT NULL,
	filters    TEXT NOT NULL DEFAULT '{}',
	created_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX segments_website ON segments (website_id);

-- seq is the rowid: AUTOINCREMENT keeps it strictly increasing and never
-- reused, even after the newest notification is deleted.
CREATE TABLE notifications (
	seq            INTEGER PRIMARY KEY AUTOINCREMENT,
	id             TEXT NOT NULL UNIQUE,
	website_id     TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	status         TEXT NOT NULL,
	title          TEXT NOT NULL DEFAULT '',
	body           TEXT NOT NULL DEFAULT '',
	content        BLOB,
	target         BLOB,
	target_summary TEXT NOT NULL DEFAULT '',
	send_body      BLOB,
	transactional  INTEGER NOT NULL DEFAULT 0,
	ab             INTEGER NOT NULL DEFAULT 0,
	automation     INTEGER NOT NULL DEFAULT 0,
	created_at     INTEGER NOT NULL,
	scheduled_at   INTEGER,
	started_at     INTEGER,
	finished_at    INTEGER,
	published_at   INTEGER,
	error          TEXT NOT NULL DEFAULT '',
	recipients     INTEGER NOT NULL DEFAULT 0,
	processed      INTEGER NOT NULL DEFAULT 0,
	sent           INTEGER NOT NULL DEFAULT 0,
	delivered      INTEGER NOT NULL DEFAULT 0,
	failed         INTEGER NOT NULL DEFAULT 0,
	pruned         INTEGER NOT NULL DEFAULT 0,
	clicked        INTEGER NOT NULL DEFAULT 0,
	conversions    INTEGER NOT NULL DEFAULT 0,
	revenue        REAL NOT NULL DEFAULT 0,
	shards_done    INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX notifications_list ON notifications (website_id, seq);
CREATE INDEX notifications_due ON notifications (scheduled_at)
	WHERE status = 'scheduled';
CREATE INDEX notifications_unpublished ON notifications (created_at)
	WHERE status = 'queued' AND published_at IS NULL;

CREATE TABLE notification_shards (
	notification_id TEXT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
	shard           INTEGER NOT NULL,
	done_at         INTEGER NOT NULL,
	PRIMARY KEY (notification_id, shard)
) WITHOUT ROWID;

-- The biggest table (a row per push), so keyed by the notification's integer
-- seq rather than its uuid text: 40% smaller keys, faster batch inserts. No
-- foreign key to endpoints: a result outlives a pruned endpoint.
CREATE TABLE deliveries (
	notification_seq INTEGER NOT NULL REFERENCES notifications (seq) ON DELETE CASCADE,
	endpoint_id      TEXT NOT NULL,
	outcome          TEXT NOT NULL,
	at               INTEGER NOT NULL,
	PRIMARY KEY (notification_seq, endpoint_id)
) WITHOUT ROWID;

CREATE TABLE interactions (
	notification_id TEXT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
	endpoint_id     TEXT NOT NULL,
	kind            TEXT NOT NULL,
	at              INTEGER NOT NULL,
	PRIMARY KEY (notification_id, endpoint_id, kind)
) WITHOUT ROWID;
