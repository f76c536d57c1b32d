-- PostgreSQL's block of 0003_labels.sql: the labels of the subscribers
-- there are, and the trigger function that keeps them in step.
{{define "sync"}}
INSERT INTO subscriber_labels
	SELECT s.website_id, j.key, coalesce(j.value, ''), s.id
	FROM subscribers s, jsonb_each_text(s.tags) j WHERE s.tags <> '{}';

CREATE FUNCTION subscriber_labels_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'UPDATE' THEN
		DELETE FROM subscriber_labels WHERE subscriber_id = OLD.id;
	END IF;
	INSERT INTO subscriber_labels
		SELECT NEW.website_id, j.key, coalesce(j.value, ''), NEW.id FROM jsonb_each_text(NEW.tags) j;
	RETURN NULL;
END
$$;

CREATE TRIGGER subscriber_labels_insert AFTER INSERT ON subscribers
	FOR EACH ROW WHEN (NEW.tags <> '{}') EXECUTE FUNCTION subscriber_labels_sync();
CREATE TRIGGER subscriber_labels_update AFTER UPDATE OF tags ON subscribers
	FOR EACH ROW WHEN (NEW.tags IS DISTINCT FROM OLD.tags) EXECUTE FUNCTION subscriber_labels_sync();
{{end}}
