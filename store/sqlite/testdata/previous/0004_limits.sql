-- Version 4: request rates and send budgets (spec 8.1), counted in the
-- store so every API node shares them. One row per key and fixed window;
-- a take deletes its key's older windows.
CREATE TABLE rate_counters (
	key          TEXT NOT NULL,
	window_start INTEGER NOT NULL, -- unix seconds
	count        INTEGER NOT NULL,
	PRIMARY KEY (key, window_start)
) WITHOUT ROWID;
