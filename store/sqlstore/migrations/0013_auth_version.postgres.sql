-- PostgreSQL's blocks of 0013_auth_version.sql.

-- The one row is the key true.
{{define "id"}}id      boolean PRIMARY KEY DEFAULT true CHECK (id){{end}}

{{define "bump"}}
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
{{end}}
