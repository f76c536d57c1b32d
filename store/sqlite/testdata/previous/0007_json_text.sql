-- Version 7: nothing to change here (SQLite keeps JSON as the text
-- written); PostgreSQL turns the notification's JSON columns from jsonb to
-- json so both stores show the same member order.
SELECT 1;
