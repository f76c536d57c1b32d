-- PostgreSQL's blocks of 0001_init.sql: what its first tables were made
-- with beyond the dialect's types.

-- A key's scopes, a text[] until 0014_key_scopes_json made them JSON.
{{define "scopes"}}scopes       text[] NOT NULL DEFAULT '{}'{{end}}

{{define "shard_check"}} CHECK (shard >= 0 AND shard < 64){{end}}

-- id is COLLATE "C": audience pages are keyed on it and must follow byte
-- order whatever the database's collation (and C compares fastest). One
-- page of a shard's audience is one range of endpoints_audience.
{{define "endpoints"}}
CREATE TABLE endpoints (
	id            text COLLATE "C" PRIMARY KEY,
	website_id    text NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	shard         integer NOT NULL, -- the subscriber's
	subscriber_id text NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	url           text NOT NULL,
	p256dh        text NOT NULL,
	auth          text NOT NULL,
	device        text NOT NULL DEFAULT '',
	user_agent    text NOT NULL DEFAULT '',
	created_at    timestamptz NOT NULL,
	last_seen_at  timestamptz NOT NULL
);

CREATE INDEX endpoints_audience ON endpoints (website_id, shard, id);
{{end}}

-- Slugs are unique per website in any case (SQLite's NOCASE).
{{define "topics"}}
CREATE TABLE topics (
	id         text PRIMARY KEY,
	website_id text NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name       text NOT NULL,
	slug       text NOT NULL,
	created_at timestamptz NOT NULL
);

CREATE UNIQUE INDEX topics_slug ON topics (website_id, lower(slug));
{{end}}

-- seq is an identity column: strictly increasing and never reused. The
-- counters are updated by every recorded batch; the free space left on each
-- page (fillfactor) lets those updates stay HOT (no index writes). content,
-- target and send_body were jsonb until 0007_json_text.
{{define "notifications"}}
CREATE TABLE notifications (
	seq            bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
	id             text PRIMARY KEY,
	website_id     text NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	status         text NOT NULL,
	title          text NOT NULL DEFAULT '',
	body           text NOT NULL DEFAULT '',
	content        jsonb,
	target         jsonb,
	target_summary text NOT NULL DEFAULT '',
	send_body      jsonb,
	transactional  boolean NOT NULL DEFAULT false,
	ab             boolean NOT NULL DEFAULT false,
	automation     boolean NOT NULL DEFAULT false,
	created_at     timestamptz NOT NULL,
	scheduled_at   timestamptz,
	started_at     timestamptz,
	finished_at    timestamptz,
	published_at   timestamptz,
	error          text NOT NULL DEFAULT '',
	recipients     bigint NOT NULL DEFAULT 0,
	processed      bigint NOT NULL DEFAULT 0,
	sent           bigint NOT NULL DEFAULT 0,
	delivered      bigint NOT NULL DEFAULT 0,
	failed         bigint NOT NULL DEFAULT 0,
	pruned         bigint NOT NULL DEFAULT 0,
	clicked        bigint NOT NULL DEFAULT 0,
	conversions    bigint NOT NULL DEFAULT 0,
	revenue        double precision NOT NULL DEFAULT 0,
	shards_done    integer NOT NULL DEFAULT 0
) WITH (fillfactor = 80);
{{end}}

-- The biggest table (a row per push), so keyed by the notification's
-- bigint seq rather than its uuid text. No foreign keys: a result outlives a
-- pruned endpoint, and the notification's key check would cost as much as
-- the insert itself (RecordResults takes the seq from the notification row
-- in the same statement; BenchmarkRecordResults/one-statement-fk). Whatever
-- deletes notifications deletes their deliveries.
{{define "deliveries"}}
CREATE TABLE deliveries (
	notification_seq bigint NOT NULL,
	endpoint_id      text NOT NULL,
	outcome          text NOT NULL CHECK (outcome IN ('sent', 'failed', 'pruned')),
	at               timestamptz NOT NULL,
	PRIMARY KEY (notification_seq, endpoint_id)
);
{{end}}

{{define "kind_check"}} CHECK (kind IN ('delivered', 'clicked')){{end}}
