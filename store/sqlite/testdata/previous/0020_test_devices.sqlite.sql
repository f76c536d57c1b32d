-- Version 20: test devices (store.TestDevices). Browsers a website's team
-- marked to receive its test sends. A row goes with its endpoint: a
-- browser that unsubscribes or expires is no test device any more.
CREATE TABLE test_devices (
	endpoint_id TEXT PRIMARY KEY REFERENCES endpoints (id) ON DELETE CASCADE,
	website_id  TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	name        TEXT NOT NULL,
	created_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX test_devices_website ON test_devices (website_id, created_at);

-- A test send (to the test devices): listed like any send, left out of
-- the website's stats (store.Stats).
ALTER TABLE notifications ADD COLUMN test INTEGER NOT NULL DEFAULT 0;
