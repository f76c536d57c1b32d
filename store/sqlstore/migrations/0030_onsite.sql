-- Version 30: on the website itself (issue 36, parts 1, 2 and 5): the
-- subscription prompt, the welcome notification and on-site messages
-- (store.Onsite).
--
-- site_settings: a website's prompt ('prompt') and welcome ('welcome')
-- settings, each the JSON document package onsite reads, kept as
-- written, as a segment's filters are.
CREATE TABLE site_settings (
	website_id TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name       TEXT NOT NULL,
	body       TEXT NOT NULL,
	updated_at {{.Time}} NOT NULL,
	PRIMARY KEY (website_id, name)
){{.WithoutRowid}};

-- onsite_messages: a website's on-site messages (banner, modal,
-- slide-in); definition is the JSON package onsite reads.
CREATE TABLE onsite_messages (
	id         TEXT PRIMARY KEY,
	website_id TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name       TEXT NOT NULL,
	status     TEXT NOT NULL,
	definition TEXT NOT NULL,
	created_at {{.Time}} NOT NULL,
	updated_at {{.Time}} NOT NULL
);
CREATE INDEX onsite_messages_website ON onsite_messages (website_id, created_at);

-- onsite_counts: what the browser SDK counted, per subject (a prompt
-- kind, 'prompt:<kind>', or an on-site message's id) and kind
-- (impression, accept, dismiss, click). A message's counts go with it.
CREATE TABLE onsite_counts (
	website_id TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	subject    TEXT NOT NULL,
	kind       TEXT NOT NULL,
	n          {{.Bigint}} NOT NULL,
	PRIMARY KEY (website_id, subject, kind)
){{.WithoutRowid}};

-- welcome_ledger: the endpoints a welcome notification was sent to, keyed
-- by the SHA-256 of the endpoint URL and written in the transaction that
-- stores the send (and removes its timer), so that an endpoint gets its
-- welcome once, whatever crashes and however often it re-subscribes.
CREATE TABLE welcome_ledger (
	website_id      TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	endpoint_hash   TEXT NOT NULL,
	notification_id TEXT,
	at              {{.Time}} NOT NULL,
	PRIMARY KEY (website_id, endpoint_hash)
){{.WithoutRowid}};

-- A welcome notification: its own kind of send in the reports.
ALTER TABLE notifications ADD COLUMN welcome {{.Bool}} NOT NULL DEFAULT {{.False}};
