-- Version 15: the columns the facets count by compare in byte order
-- (COLLATE "C"), as SQLite's TEXT does, so that one query orders equal
-- counts the same way on both engines whatever the database's collation
-- (C also compares fastest). Only the order changes: equality under the
-- database's deterministic collation was already byte equality. The indexes
-- over the columns are rebuilt; the tables are not rewritten.
ALTER TABLE subscribers
	ALTER COLUMN country TYPE text COLLATE "C",
	ALTER COLUMN language TYPE text COLLATE "C";
ALTER TABLE endpoints ALTER COLUMN device TYPE text COLLATE "C";
ALTER TABLE subscriber_labels
	ALTER COLUMN key TYPE text COLLATE "C",
	ALTER COLUMN value TYPE text COLLATE "C";
