-- Version 40: each endpoint holds its browser's language (store.Endpoint's
-- Language), the one its pushes are translated into. A registration sets
-- it (an empty language keeps the one stored; a new browser without one
-- takes its person's), and no other browser's row is written when a
-- person's language changes. Until now every push took its person's
-- language, the last that any of the person's browsers registered with.
-- A browser starts with its person's.
--
-- A send that reads no subscriber field (no filter, segment, merge tag or
-- waves) then walks the endpoints alone (store.AudienceQuery's Lean),
-- without looking each endpoint's subscriber up by its key.
ALTER TABLE endpoints ADD COLUMN language TEXT NOT NULL DEFAULT '';

UPDATE endpoints SET language = (SELECT s.language FROM subscribers s WHERE s.id = endpoints.subscriber_id);
