-- Version 7: a notification's content, target and send body are kept as
-- the JSON text the API wrote (json, not jsonb), so the detail's sendBody
-- and target show the same member order on both stores. Nothing queries
-- inside them.
ALTER TABLE notifications
	ALTER COLUMN content TYPE json USING content::text::json,
	ALTER COLUMN target TYPE json USING target::text::json,
	ALTER COLUMN send_body TYPE json USING send_body::text::json;
