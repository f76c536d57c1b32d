-- Version 32: inbound commerce integrations (issue 37, part 2;
-- store.Integrations). integration_deliveries is the ledger of the
-- deliveries a website's Shopify and WooCommerce webhooks made: one row per
-- (website, platform, delivery id), so that a platform's retry of a
-- delivery does nothing again, and GET /integrations shows the last
-- delivery and the last error of each platform.
CREATE TABLE integration_deliveries (
	website_id  TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	platform    TEXT NOT NULL,
	delivery_id TEXT NOT NULL,
	topic       TEXT NOT NULL,
	event       TEXT NOT NULL,
	event_id    TEXT NOT NULL,
	error       TEXT NOT NULL,
	received_at {{.Time}} NOT NULL,
	PRIMARY KEY (website_id, platform, delivery_id)
){{.WithoutRowid}};
CREATE INDEX integration_deliveries_recent ON integration_deliveries (website_id, platform, received_at);
