-- SQLite's block of 0040_endpoint_language.sql: the triggers. SQLite's
-- triggers cannot set the row being written, so a new or moved endpoint
-- is updated right after, in the same statement.
{{define "sync"}}
CREATE TRIGGER endpoints_language_insert AFTER INSERT ON endpoints BEGIN
	UPDATE endpoints SET language = coalesce((SELECT language FROM subscribers WHERE id = NEW.subscriber_id), '')
	WHERE id = NEW.id;
END;

CREATE TRIGGER endpoints_language_move AFTER UPDATE OF subscriber_id ON endpoints
	WHEN NEW.subscriber_id IS NOT OLD.subscriber_id BEGIN
	UPDATE endpoints SET language = coalesce((SELECT language FROM subscribers WHERE id = NEW.subscriber_id), '')
	WHERE id = NEW.id;
END;

CREATE TRIGGER subscribers_language_change AFTER UPDATE OF language ON subscribers
	WHEN NEW.language IS NOT OLD.language BEGIN
	UPDATE endpoints SET language = NEW.language WHERE subscriber_id = NEW.id;
END;
{{end}}
