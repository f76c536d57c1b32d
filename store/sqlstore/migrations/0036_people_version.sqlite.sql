-- SQLite's blocks of 0036_people_version.sql.

-- The one row is the rowid 1.
{{define "id"}}id      INTEGER PRIMARY KEY CHECK (id = 1){{end}}

{{define "bump"}}
CREATE TRIGGER subscribers_people_version_update AFTER UPDATE OF external_id ON subscribers
	WHEN NEW.external_id IS NOT OLD.external_id BEGIN
	UPDATE people_version SET version = version + 1;
END;

CREATE TRIGGER subscribers_people_version_delete AFTER DELETE ON subscribers BEGIN
	UPDATE people_version SET version = version + 1;
END;
{{end}}
