-- PostgreSQL's block of 0011_browsers.sql: the trigger function and its
-- triggers.
{{define "sync"}}
CREATE FUNCTION endpoints_browsers_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		UPDATE subscribers SET browsers = browsers - 1 WHERE id = OLD.subscriber_id;
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		UPDATE subscribers SET browsers = browsers + 1 WHERE id = NEW.subscriber_id;
	END IF;
	RETURN NULL;
END
$$;

CREATE TRIGGER endpoints_browsers_insert AFTER INSERT ON endpoints
	FOR EACH ROW EXECUTE FUNCTION endpoints_browsers_sync();
CREATE TRIGGER endpoints_browsers_delete AFTER DELETE ON endpoints
	FOR EACH ROW EXECUTE FUNCTION endpoints_browsers_sync();
CREATE TRIGGER endpoints_browsers_move AFTER UPDATE OF subscriber_id ON endpoints
	FOR EACH ROW WHEN (NEW.subscriber_id IS DISTINCT FROM OLD.subscriber_id) EXECUTE FUNCTION endpoints_browsers_sync();
{{end}}
