-- Version 12: the notification search (q) folded in Go (store.FoldSearch),
-- the same way on both engines and whatever PostgreSQL's ctype, in place of
-- lower() on the title and the body, which folds ASCII only on SQLite
-- ("über" missed "Über").
--
-- search is store.SearchText(title, body), written with them, never empty.
-- Rows written before it hold '' until Open fills them in (backfillSearch),
-- which notifications_search_pending finds without reading the table; once
-- they are done the index is empty, and the store's own writes never add to
-- it.
ALTER TABLE notifications ADD COLUMN search TEXT NOT NULL DEFAULT '';

CREATE INDEX notifications_search_pending ON notifications (seq) WHERE search = '';
