-- Version 18: what behavioral events leave in the metadata (store.Behavior).
-- The events themselves are in the analytics event log.
--
-- conversion_credits: conversions credited to notifications, one per
-- event (a retried event credits once). A conversion is an insert here,
-- never an update of the notification's row, so a burst for one popular
-- notification does not queue on that row; FoldConversions adds the
-- unfolded ones up a batch at a time, and PurgeBehavior forgets folded ones
-- once no retry can come.
CREATE TABLE conversion_credits (
	event_id        TEXT PRIMARY KEY,
	notification_id TEXT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
	value           {{.Float}} NOT NULL,
	clicked         {{.Bool}} NOT NULL,
	folded          {{.Bool}} NOT NULL DEFAULT {{.False}},
	at              {{.Time}} NOT NULL
){{.WithoutRowid}};
CREATE INDEX conversion_credits_unfolded ON conversion_credits (at) WHERE folded = false;

-- The conversions credited for a click, of a notification's conversions.
ALTER TABLE notifications ADD COLUMN click_conversions {{.Bigint}} NOT NULL DEFAULT 0;

-- A person's interest in a product's price drops or its return to stock.
CREATE TABLE product_interests (
	website_id    TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	product_id    TEXT NOT NULL,
	kind          TEXT NOT NULL CHECK (kind IN ('price_drop', 'back_in_stock')),
	subscriber_id TEXT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	created_at    {{.Time}} NOT NULL,
	PRIMARY KEY (website_id, product_id, kind, subscriber_id)
){{.WithoutRowid}};
CREATE INDEX product_interests_subscriber ON product_interests (subscriber_id, created_at);
CREATE INDEX product_interests_created ON product_interests (created_at);

-- The people a product alert goes to, fixed when the alert was made, by
-- shard so that fan-out reads a shard's part as one range.
CREATE TABLE alert_audience (
	notification_id TEXT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
	shard           INTEGER NOT NULL,
	subscriber_id   TEXT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
	PRIMARY KEY (notification_id, shard, subscriber_id)
){{.WithoutRowid}};
CREATE INDEX alert_audience_subscriber ON alert_audience (subscriber_id);

-- When a product's last alert of a kind was asked for (the price-drop
-- dedupe).
CREATE TABLE product_alert_marks (
	website_id TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	product_id TEXT NOT NULL,
	kind       TEXT NOT NULL,
	at         {{.Time}} NOT NULL,
	PRIMARY KEY (website_id, product_id, kind)
){{.WithoutRowid}};

-- Idempotency-Key claims and the answers they replay; answer is NULL while
-- the claiming request runs. request is a hash of the request, which a
-- retry must repeat.
CREATE TABLE idempotency_keys (
	website_id TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	scope      TEXT NOT NULL,
	key        TEXT NOT NULL,
	request    TEXT NOT NULL,
	answer     TEXT,
	created_at {{.Time}} NOT NULL,
	PRIMARY KEY (website_id, scope, key)
){{.WithoutRowid}};
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- Attribution looks up a person's latest interactions by endpoint.
CREATE INDEX interactions_endpoint ON interactions (endpoint_id, at);
