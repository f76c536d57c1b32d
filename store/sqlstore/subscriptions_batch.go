package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/relaybell/relaybell/store"
)

// A batch's known browsers registering again as the same person (the SDK
// does on every page view) and its new browsers of new subscribers (a
// visitor allowing notifications) are stored by upsertBatch with a
// constant number of multi-row statements, where upsertSubscription
// takes three or four each for the first and five or six for the others:
//
//  1. a SELECT of every endpoint the batch names (its URLs and the URLs
//     it replaces), with its subscriber and that one's external id, which
//     on PostgreSQL locks the endpoints in (website, URL) byte order;
//  2. a SELECT of the subscribers holding the external ids of new
//     browsers, when one has an external id that 1 did not find (not
//     locked, as one by one);
//
// for the known browsers (upsertKnown):
//
//  3. an UPDATE of their endpoints, returning their devices, and one of
//     the devices that change, when one does (setChanged);
//  4. an UPDATE of their subscribers, which on PostgreSQL locks them in id
//     order first (a locking subquery sorted by id: the UPDATE itself
//     keeps no order), returning what the visit is learned with and
//     their countries and languages, and one of each that changes, when
//     one does (setChanged);
//  5. an upsert of the visits into subscriber_activity;
//  6. an UPDATE of the smart hours that moved, when one did;
//
// and for the new ones (upsertNew):
//
//  7. an INSERT of their subscribers, in (website, external id) order,
//     each with its smart hour, its visit's hour, as one by one;
//  8. an INSERT of their endpoints, in (website, URL) order;
//  9. an INSERT of their visits into subscriber_activity;
//  10. an INSERT … SELECT of their subscribed triggers from a VALUES list,
//     the rows of websites with an active automation of new subscribers
//     (queueTriggersN), returning which were queued (Pending);
//  11. an INSERT … SELECT of their welcome timers, when one asks for a
//     welcome, but for URLs the welcome ledger holds (queueWelcome).
//
// The rest go the one-by-one way after them, in the batch's order, and
// upsertBatch decides which from the rows read (1, 2). A registration is
// a candidate when it is neither a logout nor a replacement and sets no
// topics. A known one goes the fast way when its endpoint is its
// person's (any person's without an external id), and no registration
// before it in the batch's order touches its endpoint or subscriber. A
// registration that goes the one-by-one way touches its endpoint, the
// endpoint it replaces, their subscribers and the one holding its
// external id, and nothing else that a later fast one reads: so each
// endpoint and subscriber sees the same registrations in the same order
// as one after the other would, and stores the same. The second browser
// of one person or a URL given twice goes the one-by-one way, after the
// first.
//
// A new one (its endpoint not found by 1) goes the fast way when it is
// the first registration of the batch's order to name its URL (as its
// own or as the one it replaces) and its external id, if any, nobody
// holds that id (1, 2), and its visit, if any, is learned in the time
// zone given (in the website's, learnActivity reads it: one by one). One
// by one it would get a new subscriber and endpoint whatever the
// registrations before it do: none of them creates its URL or gives its
// external id, and none reads them (a replacement of its URL before it
// would, so makes it go the one-by-one way). Its rows being stored
// before theirs changes nothing for them then; the registrations after
// it naming its URL or external id go the one-by-one way and find its
// rows, as one by one: the second new browser of a new person joins the
// first's subscriber, an anonymous browser logging in as that person
// after it moves to it.
//
// Locks: the first statement takes every endpoint lock the batch's
// registrations need by their URLs, in one order across batches, before
// any subscriber's; the subscribers of the fast way are then locked in
// id order. A new browser's rows are new: inserting them locks nothing
// but their unique keys. Another transaction inserting the same URL or
// external id meanwhile (another node's batch, a single registration)
// is not seen by 1 or 2; 7 or 8 waits for it on the unique index, and if
// it commits, fails with a unique violation: the store's transaction
// (RetryUnique) runs the whole batch again, and 1 or 2 find its rows
// then (TestUpsertSubscriptionsNewBrowserRace). 7 and 8 insert in one
// order across batches, so two batches inserting the same keys wait for
// each other in that order. A deadlock left (the one-by-one way locks
// subscribers in its own order, as before) is run again by the store's
// transaction. SQLite's one writer needs no lock.
//
// Triggers: neither UPDATE sets external_id or subscriber_id, so the
// people version's and the browsers count's triggers have nothing to do
// for known browsers, as one by one. The browsers count's trigger is a
// row trigger on both engines: 8 counts one browser for each new
// subscriber, as each INSERT one by one does. The people version moves
// on an external id changed or a subscriber deleted, not on a new
// subscriber (migration 0036 says why): 7 moves it as one by one, not at
// all.

// againMin is the fewest candidates worth upsertBatch's first
// statement, and the fewest known browsers worth their statements: one
// alone is stored as cheaply one by one. New browsers are stored more
// cheaply by upsertNew even one alone, once the endpoints are read.
const againMin = 2

// key is an endpoint URL or an external id of a website.
type key struct{ website, s string }

func compareKeys(a, b key) int {
	return cmp.Or(strings.Compare(a.website, b.website), strings.Compare(a.s, b.s))
}

// known is a known endpoint: its id, its subscriber and that one's
// external id.
type known struct{ id, subscriber, external string }

// againCandidate says whether a registration may go the fast way, before
// its endpoint is read.
func againCandidate(in store.SubscriptionInput) bool {
	return !in.Logout && in.Replaces == "" && !in.SetTopics && len(in.Topics) == 0
}

// upsertBatch stores the registrations of list (in the given order) that
// go the fast way, setting their results in out and the subscriber.created
// events' data of the new ones in created, and returns the others, in
// order, for the one-by-one way.
func (s *Store) upsertBatch(ctx context.Context, tx Conn, list []store.SubscriptionInput, order []int, out []store.SubscriptionResult, created []*store.SubscriberCreated) ([]int, error) {
	candidates := 0
	for _, i := range order {
		if againCandidate(list[i]) {
			candidates++
		}
	}
	if candidates < againMin {
		return order, nil
	}

	var urls []key
	for _, i := range order {
		in := list[i]
		urls = append(urls, key{in.WebsiteID, in.Endpoint})
		if in.Replaces != "" {
			urls = append(urls, key{in.WebsiteID, in.Replaces})
		}
	}
	slices.SortFunc(urls, compareKeys)
	urls = slices.Compact(urls)
	endpoints := make(map[key]known, len(urls))
	holders := map[key]string{} // the subscriber holding an external id
	for chunk := range slices.Chunk(urls, rowsPerInsert) {
		args := make([]any, 0, 2*len(chunk))
		for _, u := range chunk {
			args = append(args, u.website, u.s)
		}
		rows, err := tx.Query(ctx, `SELECT e.website_id, e.url, e.id, e.subscriber_id, coalesce(s.external_id, '')
			FROM (VALUES `+valuesList(len(chunk), 2, nil)+`) AS v
			JOIN endpoints e ON e.website_id = v.column1 AND e.url = v.column2
			JOIN subscribers s ON s.id = e.subscriber_id
			ORDER BY e.website_id`+s.d.DDL.ByteOrder+`, e.url`+s.d.DDL.ByteOrder+` `+s.d.ForUpdate("e"), args...)
		type row struct {
			url key
			known
		}
		found, err := CollectRows(rows, err, func(r *row) []any {
			return []any{&r.url.website, &r.url.s, &r.id, &r.subscriber, &r.external}
		})
		if err != nil {
			return nil, err
		}
		for _, r := range found {
			endpoints[r.url] = r.known
			if r.external != "" {
				holders[key{r.url.website, r.external}] = r.subscriber
			}
		}
	}

	// The subscribers holding the external ids of new browsers that may
	// go the fast way, unless found above.
	var externals []key
	for _, i := range order {
		in := list[i]
		x := key{in.WebsiteID, in.ExternalID}
		if _, ok := endpoints[key{in.WebsiteID, in.Endpoint}]; !ok && newCandidate(in) && in.ExternalID != "" && holders[x] == "" {
			externals = append(externals, x)
		}
	}
	slices.SortFunc(externals, compareKeys)
	externals = slices.Compact(externals)
	for chunk := range slices.Chunk(externals, rowsPerInsert) {
		args := make([]any, 0, 2*len(chunk))
		for _, x := range chunk {
			args = append(args, x.website, x.s)
		}
		// Locked in id order (on PostgreSQL), before the registrations
		// one by one lock them in theirs: batches racing to register
		// browsers of the same people (a batch that lost the race to
		// create them finds them here) wait for each other at the first,
		// where one by one they deadlocked.
		rows, err := tx.Query(ctx, `SELECT s.website_id, s.external_id, s.id
			FROM (VALUES `+valuesList(len(chunk), 2, nil)+`) AS v
			JOIN subscribers s ON s.website_id = v.column1 AND s.external_id = v.column2
			ORDER BY s.id `+s.d.ForUpdate("s"), args...)
		type holder struct {
			x  key
			id string
		}
		found, err := CollectRows(rows, err, func(r *holder) []any { return []any{&r.x.website, &r.x.s, &r.id} })
		if err != nil {
			return nil, fmt.Errorf("finding people: %w", err)
		}
		for _, r := range found {
			holders[r.x] = r.id
		}
	}

	// Which go the fast way. A known endpoint's subscriber stands for
	// both: a registration touching a known endpoint touches its
	// subscriber, and a fast one's endpoint is known. A new browser goes
	// the fast way when it is the first of the batch to name its URL
	// and its external id, which nobody holds.
	var fast, fresh []int
	touched := map[string]bool{}                        // subscribers
	namedURL, namedID := map[key]bool{}, map[key]bool{} // by the registrations before
	for _, i := range order {
		in := list[i]
		u, x := key{in.WebsiteID, in.Endpoint}, key{in.WebsiteID, in.ExternalID}
		e, ok := endpoints[u]
		first := !namedURL[u] && (in.ExternalID == "" || !namedID[x])
		namedURL[u] = true
		if in.Replaces != "" {
			namedURL[key{in.WebsiteID, in.Replaces}] = true
		}
		if in.ExternalID != "" {
			namedID[x] = true
		}
		if againCandidate(in) && ok && (in.ExternalID == "" || e.external == in.ExternalID) && !touched[e.subscriber] {
			fast = append(fast, i)
			touched[e.subscriber] = true
			continue
		}
		if newCandidate(in) && !ok && first && (in.ExternalID == "" || holders[x] == "") {
			fresh = append(fresh, i)
			continue
		}
		if ok {
			touched[e.subscriber] = true
		}
		if r, ok := endpoints[key{in.WebsiteID, in.Replaces}]; ok && in.Replaces != "" {
			touched[r.subscriber] = true
		}
		if h, ok := holders[key{in.WebsiteID, in.ExternalID}]; ok && in.ExternalID != "" {
			touched[h] = true
		}
	}
	if len(fast) < againMin {
		fast = nil
	}
	// The others, in order.
	going := make([]bool, len(list))
	for _, i := range slices.Concat(fast, fresh) {
		going[i] = true
	}
	var slow []int
	for _, i := range order {
		if !going[i] {
			slow = append(slow, i)
		}
	}
	if err := s.upsertKnown(ctx, tx, list, fast, endpoints, out); err != nil {
		return nil, err
	}
	if err := s.upsertNew(ctx, tx, list, fresh, out, created); err != nil {
		return nil, err
	}
	return slow, nil
}

// upsertKnown stores the known browsers of fast registering again as
// their person (statements 3 to 6), their endpoints read and locked, and
// sets their results in out. The endpoints' and the subscribers' updates
// depend on nothing of each other's: they go as one pipeline (one round
// trip on PostgreSQL: Pipeline), the endpoints' first, as one
// after the other.
func (s *Store) upsertKnown(ctx context.Context, tx Conn, list []store.SubscriptionInput, fast []int, endpoints map[key]known, out []store.SubscriptionResult) error {
	if len(fast) == 0 {
		return nil
	}
	var queries []Piped

	// The endpoints (locked above on PostgreSQL), their devices apart
	// where they change (setChanged).
	type endpointRow struct{ id, device string }
	device := make(map[string]string, len(fast))
	var updatedEndpoints []endpointRow
	for chunk := range slices.Chunk(fast, rowsPerInsert) {
		args := make([]any, 0, 6*len(chunk))
		for _, i := range chunk {
			in := list[i]
			id := endpoints[key{in.WebsiteID, in.Endpoint}].id
			args = append(args, id, in.P256dh, in.Auth, in.UserAgent, s.time(nowOr(in.At)), in.Language)
			device[id] = in.Device
		}
		queries = append(queries, Piped{SQL: `UPDATE endpoints SET p256dh = v.column2, auth = v.column3,
				user_agent = coalesce(nullif(v.column4, ''), endpoints.user_agent),
				last_seen_at = v.column5,
				language = coalesce(nullif(v.column6, ''), endpoints.language)
			FROM (VALUES ` + valuesList(len(chunk), 6, map[int]string{4: s.d.DDL.Time}) + `) AS v
			WHERE endpoints.id = v.column1
			RETURNING endpoints.id, endpoints.device`, Args: args,
			Read: collectEach(&updatedEndpoints, len(chunk), "known endpoints", func(r *endpointRow) []any {
				return []any{&r.id, &r.device}
			})})
	}

	// The subscribers, in id order. when is each one's registration time.
	bySubscriber := make(map[string]int, len(fast))
	for _, i := range fast {
		in := list[i]
		bySubscriber[endpoints[key{in.WebsiteID, in.Endpoint}].subscriber] = i
	}
	subscribers := slices.Sorted(maps.Keys(bySubscriber))
	type subscriberRow struct {
		id, timezone      string
		smartHour         int
		pending           bool
		websiteTimezone   string
		country, language string
	}
	var updatedSubscribers []subscriberRow
	for chunk := range slices.Chunk(subscribers, rowsPerInsert) {
		args := make([]any, 0, 4*len(chunk))
		for _, id := range chunk {
			in := list[bySubscriber[id]]
			args = append(args, id, in.Timezone, in.URL, s.time(nowOr(in.At)))
		}
		// An empty value keeps the stored one (nullif). The country and
		// the language, each in an index, are set apart where they change
		// (setChanged).
		queries = append(queries, Piped{SQL: `UPDATE subscribers SET
				timezone = coalesce(nullif(l.new_timezone, ''), subscribers.timezone),
				url = coalesce(nullif(l.new_url, ''), subscribers.url),
				last_seen_at = l.new_at, unsubscribed_at = NULL
			FROM (SELECT s.id AS sid, v.column2 AS new_timezone, v.column3 AS new_url, v.column4 AS new_at
				FROM subscribers s JOIN (VALUES ` + valuesList(len(chunk), 4, map[int]string{3: s.d.DDL.Time}) + `) AS v
					ON s.id = v.column1
				ORDER BY s.id ` + s.d.ForUpdate("s") + `) AS l
			WHERE subscribers.id = l.sid
			RETURNING subscribers.id, subscribers.timezone, coalesce(subscribers.smart_hour, -1),
				EXISTS (SELECT 1 FROM automation_triggers WHERE subscriber_id = subscribers.id),
				(SELECT timezone FROM websites WHERE id = subscribers.website_id),
				subscribers.country, subscribers.language`, Args: args,
			Read: collectEach(&updatedSubscribers, len(chunk), "known subscribers", func(r *subscriberRow) []any {
				return []any{&r.id, &r.timezone, &r.smartHour, &r.pending, &r.websiteTimezone, &r.country, &r.language}
			})})
	}
	if err := Pipeline(ctx, tx, queries); err != nil {
		return err
	}

	var devices [][2]any
	for _, r := range updatedEndpoints {
		if changes(device[r.id], r.device) {
			devices = append(devices, [2]any{r.id, device[r.id]})
		}
	}
	if err := s.setChanged(ctx, tx, "endpoints", "device", devices); err != nil {
		return err
	}

	var (
		visits []visit
		smart  []string // the subscribers whose smart hour is to be set again
		// The subscribers whose country or language changes (setChanged).
		countries, languages [][2]any
	)
	for _, r := range updatedSubscribers {
		i := bySubscriber[r.id]
		in := list[i]
		out[i] = store.SubscriptionResult{SubscriberID: r.id,
			EndpointID: endpoints[key{in.WebsiteID, in.Endpoint}].id, Pending: r.pending}
		if changes(in.Country, r.country) {
			countries = append(countries, [2]any{r.id, in.Country})
		}
		if changes(in.Language, r.language) {
			languages = append(languages, [2]any{r.id, in.Language})
		}
		if in.Visit <= 0 {
			continue
		}
		// As upsertSubscription: learnHour with the website's time
		// zone given, learnActivity (the smart hour set again)
		// without.
		site, stored := in.SiteTimezone, r.smartHour
		if site == "" {
			site, stored = r.websiteTimezone, -1
		}
		hour := store.LocalHour(nowOr(in.At), r.timezone, site)
		visits = append(visits, visit{r.id, hour, in.Visit})
		if hour != stored {
			smart = append(smart, r.id)
		}
	}
	if err := s.setChanged(ctx, tx, "subscribers", "country", countries); err != nil {
		return err
	}
	if err := s.setChanged(ctx, tx, "subscribers", "language", languages); err != nil {
		return err
	}
	slices.SortFunc(visits, func(a, b visit) int { return strings.Compare(a.subscriber, b.subscriber) })
	if err := s.addVisits(ctx, tx, visits); err != nil {
		return fmt.Errorf("learning visits: %w", err)
	}
	if len(smart) > 0 {
		if err := s.resetSmartHours(ctx, tx, smart); err != nil {
			return fmt.Errorf("learning smart hours: %w", err)
		}
	}
	return nil
}

// collectEach is the Read of an UPDATE of want rows (Piped): it appends
// the rows it returns to *into, and fails unless it updated every one.
func collectEach[T any](into *[]T, want int, what string, dest func(*T) []any) func(Rows) error {
	return func(rows Rows) error {
		updated, err := CollectRows(rows, nil, dest)
		if err == nil && len(updated) != want {
			err = fmt.Errorf("%d of %d updated", len(updated), want)
		}
		if err != nil {
			return fmt.Errorf("updating %s: %w", what, err)
		}
		*into = append(*into, updated...)
		return nil
	}
}

// newCandidate says whether a new browser may go the fast way: one by
// one, a new subscriber whose visit is learned in the given time zone
// has its smart hour set at its insert; in the website's zone, read by
// learnActivity, it goes the one-by-one way.
func newCandidate(in store.SubscriptionInput) bool {
	return againCandidate(in) && (in.Visit <= 0 || in.SiteTimezone != "")
}

// upsertNew stores the new browsers of fresh (in the batch's order), each
// with a new subscriber (statements 7 to 11), sets their results in out and their
// subscriber.created events' data in created, as upsertSubscription does
// for each.
func (s *Store) upsertNew(ctx context.Context, tx Conn, list []store.SubscriptionInput, fresh []int, out []store.SubscriptionResult, created []*store.SubscriberCreated) error {
	if len(fresh) == 0 {
		return nil
	}
	smart := make(map[int]int, len(fresh)) // a registration's visit hour
	for _, i := range fresh {
		in := list[i]
		subscriber := store.NewID()
		out[i] = store.SubscriptionResult{SubscriberID: subscriber, EndpointID: store.NewEndpointID(), Created: true}
		d := store.SubscriberCreated{SubscriberID: subscriber, EndpointID: out[i].EndpointID, Device: in.Device,
			Country: in.Country}
		if ext := in.ExternalID; ext != "" {
			d.ExternalID = &ext
		}
		created[i] = &d
		if in.Visit > 0 {
			smart[i] = store.LocalHour(nowOr(in.At), in.Timezone, in.SiteTimezone)
		}
	}

	// The subscribers, their endpoints, their visits and their triggers
	// go as one pipeline (one round trip on PostgreSQL: Pipeline),
	// in that order, as one after the other.
	var queries []Piped

	// The subscribers, in the order of their external ids: two batches
	// creating the same people wait for each other in one order.
	people := slices.Clone(fresh)
	slices.SortStableFunc(people, func(a, b int) int {
		return compareKeys(key{list[a].WebsiteID, list[a].ExternalID}, key{list[b].WebsiteID, list[b].ExternalID})
	})
	for chunk := range slices.Chunk(people, rowsPerInsert) {
		args := make([]any, 0, 12*len(chunk))
		for _, i := range chunk {
			in, at := list[i], s.time(nowOr(list[i].At))
			var hour any
			if h, ok := smart[i]; ok {
				hour = h
			}
			args = append(args, out[i].SubscriberID, in.WebsiteID, nullString(in.ExternalID), in.Country, in.Language,
				in.Timezone, in.URL, store.ShardOf(out[i].SubscriberID), at, at, at, hour)
		}
		queries = append(queries, Piped{SQL: `INSERT INTO subscribers (id, website_id, external_id, country, language, timezone,
			url, shard, created_at, last_seen_at, consent_at, smart_hour) VALUES ` + valuesList(len(chunk), 12, nil),
			Args: args})
	}

	// The endpoints, in the order of their URLs (fresh's).
	for chunk := range slices.Chunk(fresh, rowsPerInsert) {
		args := make([]any, 0, 12*len(chunk))
		for _, i := range chunk {
			in, at := list[i], s.time(nowOr(list[i].At))
			args = append(args, out[i].EndpointID, in.WebsiteID, out[i].SubscriberID, in.Endpoint, in.P256dh, in.Auth,
				in.Device, in.UserAgent, in.Language, store.ShardOf(out[i].SubscriberID), at, at)
		}
		queries = append(queries, Piped{SQL: `INSERT INTO endpoints (id, website_id, subscriber_id, url, p256dh, auth,
			device, user_agent, language, shard, created_at, last_seen_at) VALUES ` + valuesList(len(chunk), 12, nil),
			Args: args})
	}

	// The visits: each new subscriber's one hour, its smart hour.
	var visits []visit
	for _, i := range fresh {
		if hour, ok := smart[i]; ok {
			visits = append(visits, visit{out[i].SubscriberID, hour, list[i].Visit})
		}
	}
	queries = append(queries, visitQueries(visits)...)

	// The subscribed triggers, where the website has an active automation
	// of new subscribers (queueTriggersN).
	bySubscriber := make(map[string]int, len(fresh))
	for _, i := range fresh {
		bySubscriber[out[i].SubscriberID] = i
	}
	triggers := make([]triggerRow, 0, len(fresh))
	for _, i := range fresh {
		triggers = append(triggers, triggerRow{list[i].WebsiteID, out[i].SubscriberID, store.TriggerSubscribed, nil, nowOr(list[i].At)})
	}
	var queued []string
	queries = append(queries, s.triggerQueries(triggers, &queued)...)
	if err := Pipeline(ctx, tx, queries); err != nil {
		return fmt.Errorf("storing new subscribers: %w", err)
	}
	for _, id := range queued {
		out[bySubscriber[id]].Pending = true
	}

	// The welcome timers, unless the ledger holds the URL.
	var welcomes []welcomeTimer
	for _, i := range fresh {
		if in := list[i]; in.Welcome != nil {
			welcomes = append(welcomes, welcomeTimer{in.WebsiteID, out[i].EndpointID, out[i].SubscriberID, in.Endpoint,
				nowOr(in.At).Add(*in.Welcome)})
		}
	}
	if err := s.queueWelcomes(ctx, tx, welcomes); err != nil {
		return fmt.Errorf("queueing welcomes: %w", err)
	}
	return nil
}
