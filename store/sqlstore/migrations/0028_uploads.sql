-- Version 28: uploads (issue 36, item 4; store.Uploads). Every node of a
-- cluster reads the files from here, and the embedded mode keeps them in
-- its SQLite file under the data directory.
--
-- uploads: one uploaded image, what it was and its size; upload_files:
-- its re-encoded files by name (full, icon, image), with their content
-- type. The uploaded bytes themselves are never stored.
CREATE TABLE uploads (
	id         TEXT PRIMARY KEY,
	website_id TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	type       TEXT NOT NULL,
	width      INTEGER NOT NULL,
	height     INTEGER NOT NULL,
	created_at {{.Time}} NOT NULL
);
CREATE INDEX uploads_website ON uploads (website_id, created_at);

CREATE TABLE upload_files (
	upload_id    TEXT NOT NULL REFERENCES uploads (id) ON DELETE CASCADE,
	name         TEXT NOT NULL,
	content_type TEXT NOT NULL,
	data         {{.Bytes}} NOT NULL,
	PRIMARY KEY (upload_id, name)
){{.WithoutRowid}};
