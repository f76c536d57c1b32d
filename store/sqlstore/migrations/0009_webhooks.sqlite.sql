-- SQLite's block of 0009_webhooks.sql: seq is the rowid, id a unique key.
{{define "keys"}}seq                  INTEGER PRIMARY KEY,
	id                   TEXT NOT NULL UNIQUE,{{end}}
