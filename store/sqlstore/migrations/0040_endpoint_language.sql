-- Version 40: each endpoint holds a copy of its subscriber's language, kept
-- by triggers (the block "sync" of 0040_endpoint_language.sqlite.sql and
-- 0040_endpoint_language.postgres.sql), so that a broadcast needing no
-- other subscriber field walks the endpoints alone (store.AudienceQuery's
-- Lean): it read each endpoint's subscriber by its key for the language
-- alone, about two thirds of PostgreSQL's work in the walk.
--
-- The triggers copy the language into an endpoint when it is added or
-- moves to another subscriber, and into every endpoint of a subscriber
-- whose language changes, so no store method can forget to.
ALTER TABLE endpoints ADD COLUMN language TEXT NOT NULL DEFAULT '';

UPDATE endpoints SET language = (SELECT s.language FROM subscribers s WHERE s.id = endpoints.subscriber_id);

{{template "sync" .}}
