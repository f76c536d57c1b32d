-- Version 19: the browsers that left (store.Stats). An endpoint row is
-- deleted when its browser turns notifications off, expires (the push
-- service reports it gone) or its person is erased; each deletion also
-- writes a row here, in the same transaction, so that a report can count
-- the browsers subscribed at the end of a past day, and those that left
-- that day. A row holds the website and two times, nothing of the browser
-- or its person. History starts with this version: browsers deleted before
-- it are not known. Rows are purged after stats.RemovalLife; a deleted
-- website's go with it. Times are timestamptz, as everywhere on
-- PostgreSQL.
CREATE TABLE endpoint_removals (
	website_id text NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	created_at timestamptz NOT NULL, -- the endpoint's
	removed_at timestamptz NOT NULL  -- never before created_at
);

-- A report reads a website's removals since its first day, created_at
-- from the index itself.
CREATE INDEX endpoint_removals_website ON endpoint_removals (website_id, removed_at, created_at);
-- The purge of old removals, of every website.
CREATE INDEX endpoint_removals_removed ON endpoint_removals (removed_at);
