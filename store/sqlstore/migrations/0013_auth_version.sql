-- Version 13: the auth version (store.Store.AuthVersion), a counter that
-- moves in the same transaction as every change to what an API node's key
-- cache holds (KeyOwner: the key, its website and its account). API nodes
-- poll it and drop their caches when it moved, so a suspension or a
-- revocation made through one node holds on every node at once (the
-- embedded mode runs the same code).
--
-- Triggers move it, so no store method can forget to: a key revocation
-- (revoked_at set, or the row deleted) moves it with nothing more to do.
-- last_used_at alone (TouchAPIKey, once a minute per key in use) does not.
-- A column or table that KeyOwner reads later must be added to the
-- triggers in a new migration. The one row's key and the triggers are the
-- blocks "id" and "bump" of 0013_auth_version.sqlite.sql and
-- 0013_auth_version.postgres.sql.
CREATE TABLE auth_version (
	{{template "id" .}},
	version {{.Bigint}} NOT NULL
);

INSERT INTO auth_version (version) VALUES (1);

{{template "bump" .}}
