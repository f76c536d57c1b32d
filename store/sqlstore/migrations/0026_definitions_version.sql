-- Version 26: the definitions version (store.DefinitionsVersion), a
-- counter that moves in the same transaction as every change to what the
-- definitions cache of a node holds (package defcache): the automations,
-- the journeys and their versions, the goals and the segments that events
-- and registrations act on, and the identity verification registrations
-- check. Nodes read it every few hundred milliseconds
-- and drop their caches when it moved, so an automation made active
-- through one node triggers on the events every node takes soon after
-- (the node it was made through drops its cache at once).
--
-- Triggers move it, so no store method can forget to. The counters kept
-- beside the definitions (automation_counts, goal_reaches, enrollments)
-- are tables of their own and do not move it. The one row's key and the
-- triggers are the blocks "id" and "bump" of
-- 0026_definitions_version.sqlite.sql and
-- 0026_definitions_version.postgres.sql.
CREATE TABLE definitions_version (
	{{template "id" .}},
	version {{.Bigint}} NOT NULL
);

INSERT INTO definitions_version (version) VALUES (1);

{{template "bump" .}}
