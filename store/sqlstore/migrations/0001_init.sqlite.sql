-- SQLite's blocks of 0001_init.sql: what its first tables were made with
-- beyond the dialect's types.

-- A key's scopes, a JSON array.
{{define "scopes"}}scopes       TEXT NOT NULL DEFAULT '[]'{{end}}

-- The shard is not checked here (PostgreSQL's is).
{{define "shard_check"}}{{end}}

-- Clustered by (website_id, shard, id): a page of a shard's audience is one
-- sequential range of the table instead of a random row lookup per endpoint,
-- a fifth less time for the hottest read (BenchmarkAudience/all-unclustered).
{{define "endpoints"}}
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
{{end}}

-- Slugs are unique per website in any case (NOCASE).
{{define "topics"}}
CREATE TABLE topics (
	id         TEXT PRIMARY KEY,
	website_id TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name       TEXT NOT NULL,
	slug       TEXT NOT NULL COLLATE NOCASE,
	created_at INTEGER NOT NULL,
	UNIQUE (website_id, slug)
) WITHOUT ROWID;
{{end}}

-- seq is the rowid: AUTOINCREMENT keeps it strictly increasing and never
-- reused, even after the newest notification is deleted. Opaque API
-- documents (content, target, send body) are BLOBs.
{{define "notifications"}}
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
{{end}}

-- The biggest table (a row per push), so keyed by the notification's integer
-- seq rather than its uuid text: 40% smaller keys, faster batch inserts. No
-- foreign key to endpoints: a result outlives a pruned endpoint.
{{define "deliveries"}}
CREATE TABLE deliveries (
	notification_seq INTEGER NOT NULL REFERENCES notifications (seq) ON DELETE CASCADE,
	endpoint_id      TEXT NOT NULL,
	outcome          TEXT NOT NULL,
	at               INTEGER NOT NULL,
	PRIMARY KEY (notification_seq, endpoint_id)
) WITHOUT ROWID;
{{end}}

-- The kind is not checked here (PostgreSQL's is).
{{define "kind_check"}}{{end}}
