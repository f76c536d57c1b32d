// Package peoplesql writes a store.PeopleFilter as an SQL condition, so the
// SQLite and PostgreSQL stores select people by the same rules.
package peoplesql

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/relaybell/relaybell/store"
)

// Dialect is what differs between the engines. Conditions are on the
// subscribers table aliased s.
type Dialect struct {
	Placeholder func(n int) string // the n-th argument, counting from 1
	Time        func(t time.Time) any
	// ContainsFold is the condition that the text expression col contains
	// the placeholder arg in any case.
	ContainsFold func(col, arg string) string
	// Labels is the expression that reads s.tags as a JSON object, NULL
	// when it has none.
	Labels string
	// Everyone is the FROM clause (aliased s) that reads every subscriber
	// of a website best, when nothing narrows the read.
	Everyone string
}

// Reach writes the query of store.Reachable: one row per person of q, with
// the columns id, external id (empty for none), country, language, url, labels
// (NULL unless q.Tags) and the number of the person's endpoints (browsers,
// which triggers keep).
func Reach(d Dialect, q store.ReachQuery) (string, []any) {
	w := &writer{d: d}
	labels := "NULL"
	if q.Tags {
		labels = d.Labels
	}
	from := "subscribers s"
	if q.Shard == store.AllShards && len(q.ExternalIDs) == 0 && reflect.ValueOf(q.Narrow).IsZero() {
		from = d.Everyone
	}
	query := `SELECT s.id, coalesce(s.external_id, ''), s.country, s.language, s.url, ` + labels + `, s.browsers
	FROM ` + from + `
	WHERE s.website_id = ` + w.arg(q.WebsiteID) + ` AND s.unsubscribed_at IS NULL AND s.browsers > 0`
	if q.Shard != store.AllShards {
		query += ` AND s.shard = ` + w.arg(q.Shard)
	}
	if len(q.ExternalIDs) > 0 {
		query += ` AND s.external_id IN (` + w.list(q.ExternalIDs) + `)`
	}
	// Over a whole website a label condition reads its labels once (as a
	// count does); within a shard it is a lookup per person.
	where, args := where(d, q.WebsiteID, q.Narrow, w.args, q.Shard == store.AllShards)
	return query + where, args
}

// Rows is what ScanReach reads of a query's result (pgx.Rows and
// *sql.Rows are).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanReach reads the rows of the query Reach wrote for q and calls fn for
// each person, as store.Reachable does.
func ScanReach(rows Rows, q store.ReachQuery, fn func(sub *store.Subscriber, browsers int)) error {
	var (
		sub      store.Subscriber
		tags     []byte
		browsers int
	)
	dest := []any{&sub.ID, &sub.ExternalID, &sub.Country, &sub.Language, &sub.URL, &tags, &browsers}
	for rows.Next() {
		sub = store.Subscriber{WebsiteID: q.WebsiteID, Shard: q.Shard}
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("reading reachable people: %w", err)
		}
		if q.Shard == store.AllShards {
			sub.Shard = store.ShardOf(sub.ID)
		}
		if len(tags) > 0 {
			if err := json.Unmarshal(tags, &sub.Tags); err != nil {
				return fmt.Errorf("subscriber %s tags: %w", sub.ID, err)
			}
		}
		fn(&sub, browsers)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading reachable people: %w", err)
	}
	return nil
}

// And returns f as conditions on the website's subscribers (aliased s) to
// append to a WHERE clause (" AND ..."; "" when f selects everyone), and
// args with f's arguments appended; the placeholders are numbered after the
// arguments already in args.
//
// The external-id search is a subquery over subscribers_external_id. A label
// condition is tested on each subscriber read (an index lookup), which ends
// a page early; CountAnd reads the matching labels instead.
func And(d Dialect, websiteID string, f store.PeopleFilter, args []any) (string, []any) {
	return where(d, websiteID, f, args, false)
}

// CountAnd is And for counting everyone who matches: a label condition
// becomes the set of subscribers with that label, read once from the
// (website_id, key, value) index.
func CountAnd(d Dialect, websiteID string, f store.PeopleFilter, args []any) (string, []any) {
	return where(d, websiteID, f, args, true)
}

func where(d Dialect, websiteID string, f store.PeopleFilter, args []any, count bool) (string, []any) {
	w := &writer{d: d, args: args}
	if f.Q != "" {
		w.and("(s.id = " + w.arg(f.Q) + " OR s.id IN (SELECT x.id FROM subscribers x WHERE x.website_id = " + w.arg(websiteID) +
			" AND x.external_id IS NOT NULL AND " + d.ContainsFold("x.external_id", w.arg(f.Q)) + "))")
	}
	switch f.Status {
	case "unsubscribed":
		w.and("s.unsubscribed_at IS NOT NULL")
	case "subscribed":
		w.and("s.unsubscribed_at IS NULL AND s.browsers > 0")
	case "no_device":
		w.and("s.unsubscribed_at IS NULL AND s.browsers = 0")
	}
	if len(f.Countries) > 0 {
		w.and("s.country IN (" + w.list(f.Countries) + ")")
	}
	if len(f.Languages) > 0 {
		var alts []string
		for _, l := range f.Languages {
			l = strings.ToLower(l)
			cond := "lower(s.language) = " + w.arg(l)
			if !strings.ContainsAny(l, "-_") {
				cond += " OR substr(lower(s.language), 1, " + w.arg(len(l)+1) + ") IN (" + w.arg(l+"-") + ", " + w.arg(l+"_") + ")"
			}
			alts = append(alts, cond)
		}
		w.and("(" + strings.Join(alts, " OR ") + ")")
	}
	if len(f.Devices) > 0 {
		w.and("EXISTS (SELECT 1 FROM endpoints e WHERE e.subscriber_id = s.id AND e.device IN (" + w.list(f.Devices) + "))")
	}
	if len(f.Topics) > 0 {
		w.and("EXISTS (SELECT 1 FROM topic_optins o WHERE o.subscriber_id = s.id AND o.topic_id IN (" + w.list(f.Topics) + "))")
	}
	for _, t := range f.Tags {
		cond := "EXISTS (SELECT 1 FROM subscriber_labels l WHERE l.subscriber_id = s.id AND l.website_id = "
		if count {
			cond = "s.id IN (SELECT l.subscriber_id FROM subscriber_labels l WHERE l.website_id = "
		}
		cond += w.arg(websiteID) + " AND l.key = " + w.arg(t.Key)
		if t.HasValue {
			cond += " AND l.value = " + w.arg(t.Value)
		}
		w.and(cond + ")")
	}
	w.between("s.created_at", f.JoinedFrom, f.JoinedTo)
	w.between("s.last_seen_at", f.SeenFrom, f.SeenTo)
	if len(w.conds) == 0 {
		return "", args
	}
	return " AND " + strings.Join(w.conds, " AND "), w.args
}

type writer struct {
	d     Dialect
	args  []any
	conds []string
}

func (w *writer) and(cond string) { w.conds = append(w.conds, cond) }

func (w *writer) arg(v any) string {
	w.args = append(w.args, v)
	return w.d.Placeholder(len(w.args))
}

func (w *writer) list(vs []string) string {
	ph := make([]string, len(vs))
	for i, v := range vs {
		ph[i] = w.arg(v)
	}
	return strings.Join(ph, ", ")
}

func (w *writer) between(col string, from, to time.Time) {
	if !from.IsZero() {
		w.and(col + " >= " + w.arg(w.d.Time(from)))
	}
	if !to.IsZero() {
		w.and(col + " < " + w.arg(w.d.Time(to)))
	}
}
