-- PostgreSQL's block of 0009_webhooks.sql: id is the key, seq an identity.
{{define "keys"}}id                   text PRIMARY KEY,
	seq                  bigint GENERATED ALWAYS AS IDENTITY,{{end}}
