-- Version 3: the audience views at a million subscribers.

-- Labels as rows, kept in step with subscribers.tags by triggers, so label
-- filters and facets read an index instead of every subscriber's JSON.
CREATE TABLE subscriber_labels (
	website_id    TEXT NOT NULL,
	key           TEXT NOT NULL,
	value         TEXT NOT NULL,
	subscriber_id TEXT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	PRIMARY KEY (website_id, key, value, subscriber_id)
) WITHOUT ROWID;

CREATE INDEX subscriber_labels_subscriber ON subscriber_labels (subscriber_id);

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

-- Facets count countries, languages and devices from indexes alone.
CREATE INDEX subscribers_country ON subscribers (website_id, country);
CREATE INDEX subscribers_language ON subscribers (website_id, language);
CREATE INDEX endpoints_device ON endpoints (website_id, device, subscriber_id);
