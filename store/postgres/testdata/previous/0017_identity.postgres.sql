-- Version 17: identity verification (store.Identity). A website's mode
-- (no row: off) and its active secrets, at most two (the store checks it),
-- each named by an id so that one can be retired while the other is in
-- use. They live apart from websites and its settings, so nothing that
-- reads a website (KeyOwner, GET /settings) holds a secret, and a change
-- does not move the auth version. Times are timestamptz, as everywhere on
-- PostgreSQL.
CREATE TABLE identity_verification (
	website_id text PRIMARY KEY REFERENCES websites (id) ON DELETE CASCADE,
	mode       text NOT NULL CHECK (mode IN ('off', 'report', 'enforce'))
);

CREATE TABLE identity_secrets (
	website_id text NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	id         text NOT NULL,
	secret     text NOT NULL,
	created_at timestamptz NOT NULL,
	PRIMARY KEY (website_id, id)
);
