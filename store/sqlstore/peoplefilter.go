package sqlstore

import (
	"strconv"
	"strings"
	"time"

	"github.com/relaybell/relaybell/store"
)

// A store.PeopleFilter is written here as SQL conditions on the subscribers
// table aliased s, once for both engines.

// peopleLabels reads s.tags as a JSON object, NULL when it has none (on
// PostgreSQL '{}' is taken as jsonb).
const peopleLabels = `nullif(s.tags, '{}')`

// ReachSQL writes the query of Reachable: one row per person of q, with the
// columns id, external id (empty for none), country, language, url, labels
// (NULL unless q.Tags) and the number of the person's endpoints (browsers,
// which triggers keep; 1 for q.EndpointID, the one browser selected).
func ReachSQL(d Dialect, q store.ReachQuery) (string, []any) {
	w := &peopleWriter{d: d}
	labels := "NULL"
	if q.Tags {
		labels = peopleLabels
	}
	// A send to one browser counts that one, whatever else its person has.
	browsers := "s.browsers"
	if q.EndpointID != "" {
		browsers = "1"
	}
	query := `SELECT s.id, coalesce(s.external_id, ''), s.country, s.language, s.url, ` + labels + `, ` + browsers + `
	FROM subscribers s
	WHERE s.website_id = ` + w.arg(q.WebsiteID) + ` AND s.unsubscribed_at IS NULL AND s.browsers > 0`
	if q.Shard != store.AllShards {
		query += ` AND s.shard = ` + w.arg(q.Shard)
	}
	if len(q.ExternalIDs) > 0 {
		query += ` AND s.external_id IN (` + w.list(q.ExternalIDs) + `)`
	}
	if q.AlertID != "" {
		query += ` AND s.id IN (SELECT a.subscriber_id FROM alert_audience a WHERE a.notification_id = ` + w.arg(q.AlertID) + `)`
	}
	if q.SubscriberID != "" {
		query += ` AND s.id = ` + w.arg(q.SubscriberID)
	}
	if q.EndpointID != "" {
		query += ` AND s.id IN (SELECT e.subscriber_id FROM endpoints e WHERE e.id = ` + w.arg(q.EndpointID) +
			` AND e.website_id = ` + w.arg(q.WebsiteID) + `)`
	}
	if q.TestDevices {
		query += ` AND s.id IN (SELECT e.subscriber_id FROM test_devices t CROSS JOIN endpoints e
			WHERE t.website_id = ` + w.arg(q.WebsiteID) + ` AND e.id = t.endpoint_id)`
	}
	// Over a whole website a label condition reads its labels once (as a
	// count does); within a shard it is a lookup per person.
	w.filter(q.WebsiteID, q.Narrow, q.Shard == store.AllShards)
	return query + w.where(), w.args
}

// peopleAnd returns f as conditions on the website's subscribers (aliased
// s) to append to a WHERE clause (" AND ..."; "" when f selects everyone),
// and args with f's arguments appended; the placeholders are numbered after
// the arguments already in args.
//
// The external-id search is a subquery over subscribers_external_id. A
// label condition is tested on each subscriber read (an index lookup), which
// ends a page early; with count (everyone who matches is counted) it is the
// set of subscribers with that label instead, read once from the (website_id,
// key, value) index.
func peopleAnd(d Dialect, websiteID string, f store.PeopleFilter, args []any, count bool) (string, []any) {
	w := &peopleWriter{d: d, args: args}
	w.filter(websiteID, f, count)
	return w.where(), w.args
}

// peopleWriter gathers the conditions and arguments of a query.
type peopleWriter struct {
	d     Dialect
	args  []any
	conds []string
}

func (w *peopleWriter) filter(websiteID string, f store.PeopleFilter, count bool) {
	if f.Q != "" {
		w.and("(s.id = " + w.arg(f.Q) + " OR s.id IN (SELECT x.id FROM subscribers x WHERE x.website_id = " + w.arg(websiteID) +
			" AND x.external_id IS NOT NULL AND " + w.d.ContainsFold("x.external_id", w.arg(f.Q)) + "))")
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
}

// where is the conditions as " AND ...", or "" for none.
func (w *peopleWriter) where() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " AND " + strings.Join(w.conds, " AND ")
}

func (w *peopleWriter) and(cond string) { w.conds = append(w.conds, cond) }

// arg adds an argument and returns its placeholder.
func (w *peopleWriter) arg(v any) string {
	w.args = append(w.args, v)
	return "$" + strconv.Itoa(len(w.args))
}

// list adds the arguments of an IN list, one placeholder each, which keeps
// the planners' estimates of short lists.
func (w *peopleWriter) list(vs []string) string {
	ph := make([]string, len(vs))
	for i, v := range vs {
		ph[i] = w.arg(v)
	}
	return strings.Join(ph, ", ")
}

func (w *peopleWriter) between(col string, from, to time.Time) {
	if !from.IsZero() {
		w.and(col + " >= " + w.arg(w.d.Time(from)))
	}
	if !to.IsZero() {
		w.and(col + " < " + w.arg(w.d.Time(to)))
	}
}
