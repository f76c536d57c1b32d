-- Version 13: the auth version (store.Store.AuthVersion), a counter that
-- moves in the same transaction as every change to what an API node's key
-- cache holds (KeyOwner: the key, its website and its account). API nodes
-- poll it and drop their caches when it moved, so a suspension or a
-- revocation made through one node holds on every node at once.
--
-- Triggers move it, so no store method can forget to: a key revocation
-- (revoked_at set, or the row deleted) moves it with nothing more to do.
-- last_used_at alone (TouchAPIKey, once a minute per key in use) does not.
-- A column or table that KeyOwner reads later must be added here, in a
-- new migration; so must the SQLite store's triggers.
CREATE TABLE auth_version (
	id      boolean PRIMARY KEY DEFAULT true CHECK (id),
	version bigint NOT NULL
);

INSERT INTO auth_version (id, version) VALUES (true, 1);

CREATE FUNCTION auth_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE auth_version SET version = version + 1;
	RETURN NULL;
END
$$;

CREATE TRIGGER accounts_auth_version AFTER UPDATE OR DELETE ON accounts
	FOR EACH ROW EXECUTE FUNCTION auth_version_bump();

CREATE TRIGGER websites_auth_version AFTER UPDATE OR DELETE ON websites
	FOR EACH ROW EXECUTE FUNCTION auth_version_bump();

-- A key created moves it too: a node may have it cached as unknown.
CREATE TRIGGER api_keys_auth_version AFTER INSERT OR DELETE
	OR UPDATE OF id, website_id, name, prefix, hash, scopes, expires_at, created_at, revoked_at ON api_keys
	FOR EACH ROW EXECUTE FUNCTION auth_version_bump();
