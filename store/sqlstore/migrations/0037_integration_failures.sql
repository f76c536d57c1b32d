-- Version 37: the failed deliveries of the commerce integrations, for
-- GET /integrations' last error (store.Integrations LastIntegrationError):
-- a partial index of the few that failed, so that finding the latest
-- reads one entry however many succeeded since (without it, every
-- delivery of the website's platform when none failed lately). Its
-- order is the query's, delivery_id last, so that nothing is sorted.
CREATE INDEX integration_deliveries_failed ON integration_deliveries (website_id, platform, received_at, delivery_id) WHERE error <> '';
