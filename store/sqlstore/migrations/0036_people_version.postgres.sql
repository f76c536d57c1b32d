-- PostgreSQL's blocks of 0036_people_version.sql.

-- The one row is the key true.
{{define "id"}}id      boolean PRIMARY KEY DEFAULT true CHECK (id){{end}}

-- The triggers are deferred to the commit, so the one row is locked only
-- while its transaction commits (never while it goes on to lock endpoints
-- or subscribers, which could deadlock with a registration holding one of
-- those and waiting for the row), and move it once per transaction
-- however many subscribers it changed (a setting local to the
-- transaction remembers).
{{define "bump"}}
CREATE FUNCTION people_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF current_setting('relaybell.people_version_moved', true) IS DISTINCT FROM txid_current()::text THEN
		UPDATE people_version SET version = version + 1;
		PERFORM set_config('relaybell.people_version_moved', txid_current()::text, true);
	END IF;
	RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER subscribers_people_version_update AFTER UPDATE OF external_id ON subscribers
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
	WHEN (NEW.external_id IS DISTINCT FROM OLD.external_id)
	EXECUTE FUNCTION people_version_bump();

CREATE CONSTRAINT TRIGGER subscribers_people_version_delete AFTER DELETE ON subscribers
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
	EXECUTE FUNCTION people_version_bump();
{{end}}
