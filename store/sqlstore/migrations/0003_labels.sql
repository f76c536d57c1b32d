-- Version 3: the audience views at a million subscribers.

-- Labels as rows, kept in step with subscribers.tags by triggers (the
-- block "sync" of 0003_labels.sqlite.sql and 0003_labels.postgres.sql: the
-- engines' JSON functions and trigger languages differ), so label filters
-- and facets read an index instead of every subscriber's JSON.
CREATE TABLE subscriber_labels (
	website_id    TEXT NOT NULL,
	key           TEXT NOT NULL,
	value         TEXT NOT NULL,
	subscriber_id TEXT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	PRIMARY KEY (website_id, key, value, subscriber_id)
){{.WithoutRowid}};

CREATE INDEX subscriber_labels_subscriber ON subscriber_labels (subscriber_id);

{{template "sync" .}}

-- Facets count countries, languages and devices from indexes alone.
CREATE INDEX subscribers_country ON subscribers (website_id, country);
CREATE INDEX subscribers_language ON subscribers (website_id, language);
CREATE INDEX endpoints_device ON endpoints (website_id, device, subscriber_id);
