-- SQLite's blocks of 0026_definitions_version.sql.

-- The one row is the rowid 1.
{{define "id"}}id      INTEGER PRIMARY KEY CHECK (id = 1){{end}}

{{define "bump"}}
CREATE TRIGGER automations_definitions_version_insert AFTER INSERT ON automations BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER automations_definitions_version_delete AFTER DELETE ON automations BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER automations_definitions_version_update AFTER UPDATE OF website_id, status, trigger_type, definition ON automations BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER journeys_definitions_version_insert AFTER INSERT ON journeys BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER journeys_definitions_version_delete AFTER DELETE ON journeys BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER journeys_definitions_version_update AFTER UPDATE OF website_id, status, entry_type, version ON journeys BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER journey_versions_definitions_version_insert AFTER INSERT ON journey_versions BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER journey_versions_definitions_version_delete AFTER DELETE ON journey_versions BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER journey_versions_definitions_version_update AFTER UPDATE ON journey_versions BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER goals_definitions_version_insert AFTER INSERT ON goals BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER goals_definitions_version_delete AFTER DELETE ON goals BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER goals_definitions_version_update AFTER UPDATE ON goals BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER segments_definitions_version_insert AFTER INSERT ON segments BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER segments_definitions_version_delete AFTER DELETE ON segments BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER segments_definitions_version_update AFTER UPDATE ON segments BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER identity_verification_definitions_version_insert AFTER INSERT ON identity_verification BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER identity_verification_definitions_version_delete AFTER DELETE ON identity_verification BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER identity_verification_definitions_version_update AFTER UPDATE ON identity_verification BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER identity_secrets_definitions_version_insert AFTER INSERT ON identity_secrets BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER identity_secrets_definitions_version_delete AFTER DELETE ON identity_secrets BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

CREATE TRIGGER identity_secrets_definitions_version_update AFTER UPDATE ON identity_secrets BEGIN
	UPDATE definitions_version SET version = version + 1;
END;

{{end}}
