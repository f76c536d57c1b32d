-- Version 12: the auth version (store.Store.AuthVersion), a counter that
-- moves in the same transaction as every change to what an API node's key
-- cache holds (KeyOwner: the key, its website and its account). The API
-- polls it and drops its cache when it moved; the embedded mode runs the
-- same code as the cluster.
--
-- Triggers move it, so no store method can forget to: a key revocation
-- (revoked_at set, or the row deleted) moves it with nothing more to do.
-- last_used_at alone (TouchAPIKey, once a minute per key in use) does not.
-- A column or table that KeyOwner reads later must be added here, in a
-- new migration; so must the PostgreSQL store's triggers.
CREATE TABLE auth_version (
	id      INTEGER PRIMARY KEY CHECK (id = 1),
	version INTEGER NOT NULL
);

INSERT INTO auth_version (id, version) VALUES (1, 1);

CREATE TRIGGER accounts_auth_version_update AFTER UPDATE ON accounts BEGIN
	UPDATE auth_version SET version = version + 1;
END;

CREATE TRIGGER accounts_auth_version_delete AFTER DELETE ON accounts BEGIN
	UPDATE auth_version SET version = version + 1;
END;

CREATE TRIGGER websites_auth_version_update AFTER UPDATE ON websites BEGIN
	UPDATE auth_version SET version = version + 1;
END;

CREATE TRIGGER websites_auth_version_delete AFTER DELETE ON websites BEGIN
	UPDATE auth_version SET version = version + 1;
END;

-- A key created moves it too: a node may have it cached as unknown.
CREATE TRIGGER api_keys_auth_version_insert AFTER INSERT ON api_keys BEGIN
	UPDATE auth_version SET version = version + 1;
END;

CREATE TRIGGER api_keys_auth_version_update
	AFTER UPDATE OF id, website_id, name, prefix, hash, scopes, expires_at, created_at, revoked_at ON api_keys BEGIN
	UPDATE auth_version SET version = version + 1;
END;

CREATE TRIGGER api_keys_auth_version_delete AFTER DELETE ON api_keys BEGIN
	UPDATE auth_version SET version = version + 1;
END;
