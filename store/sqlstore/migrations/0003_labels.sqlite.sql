-- SQLite's block of 0003_labels.sql: the labels of the subscribers there
-- are, and the triggers that keep them in step.
{{define "sync"}}
INSERT INTO subscriber_labels
	SELECT s.website_id, j.key, coalesce(CAST(j.value AS TEXT), ''), s.id
	FROM subscribers s, json_each(s.tags) j WHERE s.tags <> '{}';

CREATE TRIGGER subscriber_labels_insert AFTER INSERT ON subscribers WHEN NEW.tags <> '{}' BEGIN
	INSERT INTO subscriber_labels
		SELECT NEW.website_id, j.key, coalesce(CAST(j.value AS TEXT), ''), NEW.id FROM json_each(NEW.tags) j;
END;

CREATE TRIGGER subscriber_labels_update AFTER UPDATE OF tags ON subscribers WHEN NEW.tags IS NOT OLD.tags BEGIN
	DELETE FROM subscriber_labels WHERE subscriber_id = OLD.id;
	INSERT INTO subscriber_labels
		SELECT NEW.website_id, j.key, coalesce(CAST(j.value AS TEXT), ''), NEW.id FROM json_each(NEW.tags) j;
END;
{{end}}
