// Package integrations receives the webhooks of the commerce platforms
// (Shopify and WooCommerce) at POST /integrations/{platform}/{projectId}
// (issue 37, part 2) and turns them into RelayBell's events, through the
// same path as POST /events (package events).
//
// Verification. Both platforms sign the raw body: Shopify's
// X-Shopify-Hmac-Sha256 and WooCommerce's X-WC-Webhook-Signature are the
// base64 HMAC-SHA256 of the body under the website's commerce-platform
// signing secret (settings commerceSigningSecret). The signature is
// compared in constant time with the current secret and, for 24 hours
// after a rotation (RotationGrace), with the previous one. An unsigned or
// wrongly signed request does nothing.
//
// Dedupe. A platform retries a delivery with the same delivery id
// (X-Shopify-Webhook-Id, X-WC-Webhook-Delivery-ID): the ledger
// (store.Integrations) holds one row per delivery and a replay does
// nothing. The event's id is derived from the website, the platform and
// what the event is about (an order's purchase once per order, whichever
// delivery tells it; a checkout's update once per delivery), so that a
// request that failed half way and is retried stores and credits nothing
// twice (events.Track is idempotent per event id).
//
// Topics. The person is the customer's id (the default) or e-mail
// (settings commerceExternalId "email"):
//
//   - Shopify orders/paid, WooCommerce order.created and order.updated
//     once date_paid is set: purchase {value, currency, orderId}, a
//     conversion credited as spec 4.2 says;
//   - Shopify checkouts/create and checkouts/update: cart.updated
//     {value, currency, checkoutId}; checkouts/update with completed_at
//     set: checkout.completed;
//   - Shopify products/update and WooCommerce product.updated: price_drop
//     {productId, title, price, oldPrice} for a product whose (first
//     lowered) variant sells below its compare-at (regular) price, and
//     back_in_stock {productId, variantId, title} for a Shopify variant
//     whose inventory went from none to some (old_inventory_quantity).
//     These name nobody: they are product alerts to the people
//     interested.
//   - WooCommerce product.created and product.updated: back_in_stock
//     {productId, title} for a product, {productId (parent_id),
//     variantId, title} for a variation, that comes back in stock. The
//     payload tells only the stock now (stock_status; onbackorder is not
//     in stock), so the store keeps each item's last state
//     (store.Integrations ObserveCommerceStock, one conditional update):
//     an item's first sight records it and makes nothing, and a return
//     is told once whichever and however many deliveries tell it (the
//     retry of the delivery that told it tells the same event again).
//     Deliveries are taken in the order of the product's last change
//     (date_modified_gmt, else date_modified as UTC, else the receive
//     time), not of their arrival: a late delivery older than the state
//     stored changes nothing and tells nothing. A return whose event
//     fails to be stored is taken back (store.Integrations
//     UndoCommerceRestock): the delivery's retry, or the next delivery
//     in stock, tells it.
//
// Other topics are recorded in the ledger as tracking nothing, not as
// failing, and answer 200 (a platform disables a webhook that keeps
// failing); a delivery fails (its error recorded, GET /integrations' last
// error) only when its payload cannot make the topic's event.
package integrations
