// Package webhooks delivers the events of spec 6 to the customers'
// webhook receivers.
//
// Events are written to the store's outbox (store.WebhookEvent) in the
// transaction of the change they report. The Engine, run by every fan-out
// node, then:
//
//   - queues: reads the outbox after the shared cursor and stores one
//     delivery per event and enabled webhook subscribed to it, moving the
//     cursor in the same transaction (compare-and-set, so two nodes never
//     queue an event twice);
//   - delivers: leases the deliveries whose attempt is due and POSTs each
//     body with fresh X-RelayBell-* signatures (package signature) within
//     a 10-second deadline; a 2xx succeeds and clears the webhook's
//     failure count, anything else schedules the next retry (RetryDelays,
//     jittered) until five retries failed; a 410 ends the delivery and
//     turns the webhook off. Resends and tests are one attempt (OneShot)
//     and never count toward turning a webhook off;
//   - turns off a webhook after 50 deliveries in a row failed or 3 days of
//     failed attempts, failing its waiting deliveries and queuing an
//     e-mail to the account owner, in one transaction;
//   - mails the outbox through SMTP when configured (otherwise the operator
//     reads it at GET /admin/v1/emails);
//   - prunes delivery records older than 30 days.
//
// Every attempt dials through netpolicy.Dialer: the address actually
// connected to, after DNS resolution and on each of up to 4 redirects,
// must be public unless RELAYBELL_WEBHOOK_ALLOW_HOSTS lists its host:port;
// a refused attempt is logged with status 0 and the reason.
//
// State lives in the store alone (leases, the cursor, next attempt times),
// so retries survive restarts and any number of nodes share the work.
package webhooks
