-- Version 6: the frequency cap. CappedEndpoints picks a website's sends
-- started within the cap's window before it reads deliveries by primary
-- key; without this index that pick reads every send the website ever made,
-- a cost that grows with its history (a year of 1,000 sends a day on
-- SQLite: 57 ms per 500-browser batch instead of 4; BenchmarkCappedEndpoints).
-- started_at is written once, by StartSending, so PostgreSQL's counter
-- updates stay HOT.
CREATE INDEX notifications_started ON notifications (website_id, started_at);
