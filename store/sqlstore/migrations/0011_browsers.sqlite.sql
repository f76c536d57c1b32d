-- SQLite's block of 0011_browsers.sql: the triggers.
{{define "sync"}}
CREATE TRIGGER endpoints_browsers_insert AFTER INSERT ON endpoints BEGIN
	UPDATE subscribers SET browsers = browsers + 1 WHERE id = NEW.subscriber_id;
END;

CREATE TRIGGER endpoints_browsers_delete AFTER DELETE ON endpoints BEGIN
	UPDATE subscribers SET browsers = browsers - 1 WHERE id = OLD.subscriber_id;
END;

CREATE TRIGGER endpoints_browsers_move AFTER UPDATE OF subscriber_id ON endpoints
	WHEN NEW.subscriber_id IS NOT OLD.subscriber_id BEGIN
	UPDATE subscribers SET browsers = browsers - 1 WHERE id = OLD.subscriber_id;
	UPDATE subscribers SET browsers = browsers + 1 WHERE id = NEW.subscriber_id;
END;
{{end}}
