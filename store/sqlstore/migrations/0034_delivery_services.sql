-- Version 34: delivery health per push service (issue 37's reports).
--
-- deliveries.push_service: the push service of the endpoint a failed or
-- pruned push went to, as webpush.ServiceOf names it (fcm, mozilla, apple,
-- wns, other), written with the result: a pruned endpoint's row is deleted
-- in the same transaction, so the service is known only then. A sent
-- push's is NULL (nothing reads it, and a NULL costs the biggest table
-- nothing), and so is every result recorded before this version: a report
-- counts those as other.
ALTER TABLE deliveries ADD COLUMN push_service TEXT;

-- A report counts a website's sends' failed and pruned pushes by service:
-- a few rows of each send, whatever its audience.
CREATE INDEX deliveries_trouble ON deliveries (notification_seq, outcome, push_service) WHERE outcome <> 'sent';
