-- Version 38, PostgreSQL's alone: interactions.endpoint_id compares in byte
-- order (COLLATE "C") as endpoints.id does. Under two different
-- collations the join i.endpoint_id = e.id could not use
-- interactions_endpoint: attribution (LastInteraction, LastInteractions)
-- read every interaction of its window, of every website, for each
-- conversion. Equality under the database's deterministic collation was
-- already byte equality, so no answer changes; the index over the column
-- is rebuilt, the table is not rewritten.
ALTER TABLE interactions ALTER COLUMN endpoint_id TYPE text COLLATE "C";
