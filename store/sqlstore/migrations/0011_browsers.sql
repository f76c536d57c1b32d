-- Version 11: each subscriber's number of browsers (endpoints), kept by
-- triggers (the block "sync" of 0011_browsers.sqlite.sql and
-- 0011_browsers.postgres.sql), so counting an audience (segment preview)
-- reads subscribers alone instead of looking their endpoints up.
ALTER TABLE subscribers ADD COLUMN browsers INTEGER NOT NULL DEFAULT 0;

UPDATE subscribers SET browsers = (SELECT count(*) FROM endpoints e WHERE e.subscriber_id = subscribers.id);

{{template "sync" .}}
