-- Version 11: each subscriber's number of browsers (endpoints), kept by a
-- trigger, so counting an audience (segment preview) reads subscribers
-- alone instead of looking their endpoints up.
ALTER TABLE subscribers ADD COLUMN browsers integer NOT NULL DEFAULT 0;

UPDATE subscribers s SET browsers = e.n
	FROM (SELECT subscriber_id, count(*) AS n FROM endpoints GROUP BY subscriber_id) e
	WHERE e.subscriber_id = s.id;

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
