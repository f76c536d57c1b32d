-- Version 33: reports by mail (issue 37, part 1; store.Reports).
--
-- report_settings: a website's report (no row: off). day is the weekday
-- (mon…sun) of a weekly report or the day of the month (1–28) of a monthly
-- one, empty otherwise; hour is 0–23 in the website's time zone;
-- recipients is the JSON array of the members' addresses it goes to.
CREATE TABLE report_settings (
	website_id TEXT PRIMARY KEY REFERENCES websites (id) ON DELETE CASCADE,
	frequency  TEXT NOT NULL CHECK (frequency IN ('off', 'daily', 'weekly', 'monthly')),
	day        TEXT NOT NULL,
	hour       INTEGER NOT NULL,
	recipients {{.JSON}} NOT NULL,
	updated_at {{.Time}} NOT NULL
){{.WithoutRowid}};

-- emails.content_type: the MIME type of body when it is not plain text
-- (a report: multipart/related with its boundary); NULL is text/plain.
ALTER TABLE emails ADD COLUMN content_type TEXT;

-- report_ledger: a website's reports by period (period is the first day
-- of the period the report covers, YYYY-MM-DD). A node building one holds
-- it until leased_until; sent_at is set in the transaction that queues
-- the report's messages in the outbox, so each period is mailed once.
CREATE TABLE report_ledger (
	website_id   TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	period       TEXT NOT NULL,
	leased_until {{.Time}},
	sent_at      {{.Time}},
	recipients   INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (website_id, period)
){{.WithoutRowid}};
