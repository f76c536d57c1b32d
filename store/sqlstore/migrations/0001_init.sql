-- RelayBell metadata schema, version 1. The tables were first written per
-- engine, and some differ beyond the dialect's types: those parts are the
-- blocks of 0001_init.sqlite.sql and 0001_init.postgres.sql.

CREATE TABLE accounts (
	id             TEXT PRIMARY KEY,
	owner_email    TEXT NOT NULL,
	email_verified {{.Bool}} NOT NULL DEFAULT {{.False}},
	suspended      {{.Bool}} NOT NULL DEFAULT {{.False}},
	created_at     {{.Time}} NOT NULL
){{.WithoutRowid}};

CREATE TABLE websites (
	id                TEXT PRIMARY KEY,
	account_id        TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	project_id        TEXT NOT NULL UNIQUE,
	name              TEXT NOT NULL,
	url               TEXT NOT NULL,
	timezone          TEXT NOT NULL,
	vapid_public_key  TEXT NOT NULL,
	vapid_private_key TEXT NOT NULL,
	settings          {{.JSONB}} NOT NULL DEFAULT '{}',
	created_at        {{.Time}} NOT NULL
){{.WithoutRowid}};

CREATE INDEX websites_account ON websites (account_id);

CREATE TABLE api_keys (
	id           TEXT PRIMARY KEY,
	website_id   TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name         TEXT NOT NULL,
	prefix       TEXT NOT NULL,
	hash         TEXT NOT NULL UNIQUE,
	{{template "scopes" .}},
	expires_at   {{.Time}},
	created_at   {{.Time}} NOT NULL,
	last_used_at {{.Time}},
	revoked_at   {{.Time}}
){{.WithoutRowid}};

CREATE INDEX api_keys_website ON api_keys (website_id);

CREATE TABLE subscribers (
	id              TEXT PRIMARY KEY,
	website_id      TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	external_id     TEXT,
	country         TEXT NOT NULL DEFAULT '',
	language        TEXT NOT NULL DEFAULT '',
	timezone        TEXT NOT NULL DEFAULT '',
	url             TEXT NOT NULL DEFAULT '',
	tags            {{.JSONB}} NOT NULL DEFAULT '{}',
	shard           INTEGER NOT NULL{{template "shard_check" .}},
	created_at      {{.Time}} NOT NULL,
	last_seen_at    {{.Time}} NOT NULL,
	unsubscribed_at {{.Time}}
){{.WithoutRowid}};

CREATE UNIQUE INDEX subscribers_external_id ON subscribers (website_id, external_id)
	WHERE external_id IS NOT NULL;
CREATE INDEX subscribers_website_shard ON subscribers (website_id, shard);

{{template "endpoints" .}}

CREATE UNIQUE INDEX endpoints_url ON endpoints (website_id, url);
CREATE INDEX endpoints_subscriber ON endpoints (subscriber_id);

{{template "topics" .}}

CREATE TABLE topic_optins (
	topic_id      TEXT NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
	subscriber_id TEXT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	created_at    {{.Time}} NOT NULL,
	PRIMARY KEY (topic_id, subscriber_id)
){{.WithoutRowid}};

CREATE INDEX topic_optins_subscriber ON topic_optins (subscriber_id);

CREATE TABLE segments (
	id         TEXT PRIMARY KEY,
	website_id TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name       TEXT NOT NULL,
	filters    {{.JSONB}} NOT NULL DEFAULT '{}',
	created_at {{.Time}} NOT NULL
){{.WithoutRowid}};

CREATE INDEX segments_website ON segments (website_id);

{{template "notifications" .}}

CREATE INDEX notifications_list ON notifications (website_id, seq);
CREATE INDEX notifications_due ON notifications (scheduled_at{{.SeqTiebreak}})
	WHERE status = 'scheduled';
CREATE INDEX notifications_unpublished ON notifications (created_at{{.SeqTiebreak}})
	WHERE status = 'queued' AND published_at IS NULL;

CREATE TABLE notification_shards (
	notification_id TEXT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
	shard           INTEGER NOT NULL,
	done_at         {{.Time}} NOT NULL,
	PRIMARY KEY (notification_id, shard)
){{.WithoutRowid}};

{{template "deliveries" .}}

CREATE TABLE interactions (
	notification_id TEXT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
	endpoint_id     TEXT NOT NULL,
	kind            TEXT NOT NULL{{template "kind_check" .}},
	at              {{.Time}} NOT NULL,
	PRIMARY KEY (notification_id, endpoint_id, kind)
){{.WithoutRowid}};
