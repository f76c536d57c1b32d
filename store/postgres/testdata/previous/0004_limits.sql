-- Version 4: request rates and send budgets (spec 8.1), counted in the
-- store so every API node shares them. One row per key and fixed window;
-- a take deletes its key's older windows.
CREATE TABLE rate_counters (
	key          text   NOT NULL,
	window_start bigint NOT NULL, -- unix seconds
	count        bigint NOT NULL,
	PRIMARY KEY (key, window_start)
);
