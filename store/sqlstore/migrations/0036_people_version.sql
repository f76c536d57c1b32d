-- Version 36: the people version (store.Behavior.PeopleVersion), a
-- counter that moves in the same transaction as every change to what
-- PersonRefs answers for a key it found: a subscriber's external id set,
-- changed or cleared, and a subscriber deleted (an erasure, a bulk
-- delete, its website deleted). Each node keeps the person refs events
-- look up (package defcache's People) and reads the version before
-- every batch of lookups, dropping them when it moved.
--
-- Triggers move it, so no store method can forget to. A new subscriber
-- does not: the cache keeps only keys that named somebody, and a new one
-- can take no such key (subscriber ids are new UUIDs, and an external id
-- names one subscriber of a website). The one row's key and the triggers
-- are the blocks "id" and "bump" of 0036_people_version.sqlite.sql and
-- 0036_people_version.postgres.sql.
CREATE TABLE people_version (
	{{template "id" .}},
	version {{.Bigint}} NOT NULL
);

INSERT INTO people_version (version) VALUES (1);

{{template "bump" .}}
