// Package events is what a behavioral event does (spec 4.2): a website's
// server posts one with a key (POST /events), or a subscribed browser
// tracks one for itself (RelayBell.track). Track stores it in the
// analytics event log and acts on it:
//
//   - Conversion (rules 3-4): the website's conversion names (default
//     purchase, order.completed, checkout.completed), or any event with a
//     numeric properties.value or properties.revenue, except cart.updated
//     and checkout.started. A conversion of a known person is credited to
//     the website's notification that person last clicked within the
//     attribution window, or else last had delivered within it, on any of
//     their browsers. The credit is a row of its own (no lock on the
//     notification); a Folder adds credits to the notifications' counters
//     a batch at a time, so a burst for one popular send does not queue on
//     its row.
//   - Product interest: an event naming a known person with
//     properties.productId records an interest in that product's price
//     drops; the event back_in_stock.subscribe records an interest in its
//     return to stock instead. Interests last 90 days (another event
//     renews one); a back-in-stock interest is used up by the alert that
//     reaches its person.
//   - Product alert (rules 5-6): back_in_stock or price_drop with
//     properties.productId and none of externalId, subscriberId, endpoint
//     is one send (automation, no send body) to everyone interested, cut at
//     100,000 people (newest interests first). Its text is the website's
//     (settings alertTexts) or the default, with {product.title},
//     {product.price} and {product.oldPrice} filled from properties title,
//     price and oldPrice; properties url and image are its link and image.
//     It obeys quiet hours (it waits for them to end) and the frequency
//     cap (fan-out skips capped browsers). A price_drop of a product within
//     10 minutes of the last is deduped.
//   - Automations: an event naming a known person cancels what is pending
//     of the automations that list it in their stopEvents, then starts the
//     runs of the active automations it triggers (Config.Automations);
//     automationsTriggered counts the runs started or restarted.
//   - Goals: an event naming a known person reaches the website's goals of
//     its name (Config.Goals), credited as package goals says, with the
//     event's value (properties value or revenue, as a conversion's; 0
//     without one), once per event id; the goals service ends the
//     enrolments of the journeys that exit on a goal reached.
//   - Journeys: an event naming a known person ends the enrolments whose
//     journey lists it in exitEvents, moves on those waiting for it
//     (wait_until), and enrols the person in the active journeys it is the
//     entry of (Config.Journeys); sequencesEnrolled counts them.
//
// On the hot path, concurrent events share their store calls: the person
// lookups (ids only, one call per website of a batch, answered from
// package defcache's People while the people version has not moved: a
// batch of known people costs at most one read of it, none within the
// lease PostgreSQL's store offers on it), and the conversions' credits
// (the send found and credited in one statement per website of a batch)
// with the interests (one upsert per batch): one write (store.WriteEvents,
// one pipeline, one commit), lingering 3 ms for more, made while the
// goals, automations and journeys are done, each request answered once
// the call holding its own returned, so a credit and an interest are
// committed when their event is answered. The event log's writes are shared
// too (analytics.Batched: 3 ms apart while events come together). The definitions the hooks read (automations, journeys,
// goals) come from package defcache. Each event carries a Seq stamp taken
// when it was accepted, which orders GET /events within a millisecond.
package events
