-- Version 35: the commerce platforms' stock state (issue 37, part 2;
-- store.Integrations ObserveCommerceStock). WooCommerce's product.updated
-- tells a product's stock now but not what it was: commerce_stock keeps
-- whether each product (or variation) of a website was last seen in
-- stock, so that a return to stock is told once (back_in_stock).
-- restocked_by is the delivery that last brought the item back, so that
-- the platform's retry of that delivery tells the same event again (its
-- id is the same: stored once).
CREATE TABLE commerce_stock (
	website_id   TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	platform     TEXT NOT NULL,
	item         TEXT NOT NULL,
	in_stock     {{.Bool}} NOT NULL,
	restocked_by TEXT NOT NULL,
	updated_at   {{.Time}} NOT NULL,
	PRIMARY KEY (website_id, platform, item)
){{.WithoutRowid}};
