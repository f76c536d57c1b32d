-- Version 14: a key's scopes are a JSON array, as on SQLite, so that one
-- query writes and reads them on both engines (they were a text[]). The
-- auth version's trigger names the column, so it is made again around the
-- change (as in 0013_auth_version.sql).
DROP TRIGGER api_keys_auth_version ON api_keys;

ALTER TABLE api_keys ALTER COLUMN scopes DROP DEFAULT;
ALTER TABLE api_keys ALTER COLUMN scopes TYPE json USING to_json(scopes);
ALTER TABLE api_keys ALTER COLUMN scopes SET DEFAULT '[]';

CREATE TRIGGER api_keys_auth_version AFTER INSERT OR DELETE
	OR UPDATE OF id, website_id, name, prefix, hash, scopes, expires_at, created_at, revoked_at ON api_keys
	FOR EACH ROW EXECUTE FUNCTION auth_version_bump();
