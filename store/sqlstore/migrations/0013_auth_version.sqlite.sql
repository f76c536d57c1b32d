-- SQLite's blocks of 0013_auth_version.sql.

-- The one row is the rowid 1.
{{define "id"}}id      INTEGER PRIMARY KEY CHECK (id = 1){{end}}

{{define "bump"}}
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
{{end}}
