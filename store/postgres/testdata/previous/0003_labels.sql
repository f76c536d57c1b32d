-- Version 3: the audience views at a million subscribers.

-- Labels as rows, kept in step with subscribers.tags by triggers, so label
-- filters and facets read an index instead of every subscriber's JSON.
CREATE TABLE subscriber_labels (
	website_id    text NOT NULL,
	key           text NOT NULL,
	value         text NOT NULL,
	subscriber_id text NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	PRIMARY KEY (website_id, key, value, subscriber_id)
);

CREATE INDEX subscriber_labels_subscriber ON subscriber_labels (subscriber_id);

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

-- Facets count countries, languages and devices from indexes alone.
CREATE INDEX subscribers_country ON subscribers (website_id, country);
CREATE INDEX subscribers_language ON subscribers (website_id, language);
CREATE INDEX endpoints_device ON endpoints (website_id, device, subscriber_id);
