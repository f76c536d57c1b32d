-- Version 10: each subscriber's number of browsers (endpoints), kept by
-- triggers, so counting an audience (segment preview) reads subscribers
-- alone instead of looking their endpoints up.
ALTER TABLE subscribers ADD COLUMN browsers INTEGER NOT NULL DEFAULT 0;

UPDATE subscribers SET browsers = (SELECT count(*) FROM endpoints e WHERE e.subscriber_id = subscribers.id);

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
