-- PostgreSQL's blocks of 0026_definitions_version.sql.

-- The one row is the key true.
{{define "id"}}id      boolean PRIMARY KEY DEFAULT true CHECK (id){{end}}

{{define "bump"}}
CREATE FUNCTION definitions_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE definitions_version SET version = version + 1;
	RETURN NULL;
END
$$;

CREATE TRIGGER automations_definitions_version AFTER INSERT OR DELETE
	OR UPDATE OF website_id, status, trigger_type, definition ON automations
	FOR EACH STATEMENT EXECUTE FUNCTION definitions_version_bump();

CREATE TRIGGER journeys_definitions_version AFTER INSERT OR DELETE
	OR UPDATE OF website_id, status, entry_type, version ON journeys
	FOR EACH STATEMENT EXECUTE FUNCTION definitions_version_bump();

CREATE TRIGGER journey_versions_definitions_version AFTER INSERT OR DELETE OR UPDATE ON journey_versions
	FOR EACH STATEMENT EXECUTE FUNCTION definitions_version_bump();

CREATE TRIGGER goals_definitions_version AFTER INSERT OR DELETE OR UPDATE ON goals
	FOR EACH STATEMENT EXECUTE FUNCTION definitions_version_bump();

CREATE TRIGGER segments_definitions_version AFTER INSERT OR DELETE OR UPDATE ON segments
	FOR EACH STATEMENT EXECUTE FUNCTION definitions_version_bump();

CREATE TRIGGER identity_verification_definitions_version AFTER INSERT OR DELETE OR UPDATE ON identity_verification
	FOR EACH STATEMENT EXECUTE FUNCTION definitions_version_bump();

CREATE TRIGGER identity_secrets_definitions_version AFTER INSERT OR DELETE OR UPDATE ON identity_secrets
	FOR EACH STATEMENT EXECUTE FUNCTION definitions_version_bump();
{{end}}
