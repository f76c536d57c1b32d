-- RelayBell metadata schema, version 1 (PostgreSQL).
-- The same tables as the SQLite store's 0001_init.sql, in PostgreSQL's
-- types: times are timestamptz (microseconds, UTC), JSON is jsonb, scopes a
-- text[].

CREATE TABLE accounts (
	id             text PRIMARY KEY,
	owner_email    text NOT NULL,
	email_verified boolean NOT NULL DEFAULT false,
	suspended      boolean NOT NULL DEFAULT false,
	created_at     timestamptz NOT NULL
);

CREATE TABLE websites (
	id                text PRIMARY KEY,
	account_id        text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	project_id        text NOT NULL UNIQUE,
	name              text NOT NULL,
	url               text NOT NULL,
	timezone          text NOT NULL,
	vapid_public_key  text NOT NULL,
	vapid_private_key text NOT NULL,
	settings          jsonb NOT NULL DEFAULT '{}',
	created_at        timestamptz NOT NULL
);

CREATE INDEX websites_account ON websites (account_id);

CREATE TABLE api_keys (
	id           text PRIMARY KEY,
	website_id   text NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name         text NOT NULL,
	prefix       text NOT NULL,
	hash         text NOT NULL UNIQUE,
	scopes       text[] NOT NULL DEFAULT '{}',
	expires_at   timestamptz,
	created_at   timestamptz NOT NULL,
	last_used_at timestamptz,
	revoked_at   timestamptz
);

CREATE INDEX api_keys_website ON api_keys (website_id);

CREATE TABLE subscribers (
	id              text PRIMARY KEY,
	website_id      text NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	external_id     text,
	country         text NOT NULL DEFAULT '',
	language        text NOT NULL DEFAULT '',
	timezone        text NOT NULL DEFAULT '',
	url             text NOT NULL DEFAULT '',
	tags            jsonb NOT NULL DEFAULT '{}',
	shard           integer NOT NULL CHECK (shard >= 0 AND shard < 64),
	created_at      timestamptz NOT NULL,
	last_seen_at    timestamptz NOT NULL,
	unsubscribed_at timestamptz
);

CREATE UNIQUE INDEX subscribers_external_id ON subscribers (website_id, external_id)
	WHERE external_id IS NOT NULL;
CREATE INDEX subscribers_website_shard ON subscribers (website_id, shard);

-- id is COLLATE "C": audience pages are keyed on it and must follow byte
-- order whatever the database's collation (and C compares fastest).
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

-- One page of a shard's audience is one range of this index.
CREATE INDEX endpoints_audience ON endpoints (website_id, shard, id);
CREATE UNIQUE INDEX endpoints_url ON endpoints (website_id, url);
CREATE INDEX endpoints_subscriber ON endpoints (subscriber_id);

-- Slugs are unique per website in any case (the SQLite store's NOCASE).
CREATE TABLE topics (
	id         text PRIMARY KEY,
	website_id text NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name       text NOT NULL,
	slug       text NOT NULL,
	created_at timestamptz NOT NULL
);

CREATE UNIQUE INDEX topics_slug ON topics (website_id, lower(slug));

CREATE TABLE topic_optins (
	topic_id      text NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
	subscriber_id text NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	created_at    timestamptz NOT NULL,
	PRIMARY KEY (topic_id, subscriber_id)
);

CREATE INDEX topic_optins_subscriber ON topic_optins (subscriber_id);

CREATE TABLE segments (
	id         text PRIMARY KEY,
	website_id text NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name       text NOT NULL,
	filters    jsonb NOT NULL DEFAULT '{}',
	created_at timestamptz NOT NULL
);

CREATE INDEX segments_website ON segments (website_id);

-- seq is an identity column: strictly increasing and never reused. The
-- counters are updated by every recorded batch; the free space left on each
-- page (fillfactor) lets those updates stay HOT (no index writes).
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

CREATE INDEX notifications_list ON notifications (website_id, seq);
CREATE INDEX notifications_due ON notifications (scheduled_at, seq)
	WHERE status = 'scheduled';
CREATE INDEX notifications_unpublished ON notifications (created_at, seq)
	WHERE status = 'queued' AND published_at IS NULL;

CREATE TABLE notification_shards (
	notification_id text NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
	shard           integer NOT NULL,
	done_at         timestamptz NOT NULL,
	PRIMARY KEY (notification_id, shard)
);

-- The biggest table (a row per push), so keyed by the notification's
-- bigint seq rather than its uuid text. No foreign keys: a result outlives a
-- pruned endpoint, and the notification's key check would cost as much as
-- the insert itself (RecordResults takes the seq from the notification row
-- in the same statement; BenchmarkRecordResults/one-statement-fk). Whatever
-- deletes notifications deletes their deliveries.
CREATE TABLE deliveries (
	notification_seq bigint NOT NULL,
	endpoint_id      text NOT NULL,
	outcome          text NOT NULL CHECK (outcome IN ('sent', 'failed', 'pruned')),
	at               timestamptz NOT NULL,
	PRIMARY KEY (notification_seq, endpoint_id)
);

CREATE TABLE interactions (
	notification_id text NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
	endpoint_id     text NOT NULL,
	kind            text NOT NULL CHECK (kind IN ('delivered', 'clicked')),
	at              timestamptz NOT NULL,
	PRIMARY KEY (notification_id, endpoint_id, kind)
);
