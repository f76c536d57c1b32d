package store

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Without returns the ids that are not in done, in their order. Stores use
// it for Undelivered after reading which endpoints have results.
func Without(ids []string, done map[string]struct{}) []string {
	out := make([]string, 0, len(ids)-min(len(done), len(ids)))
	for _, id := range ids {
		if _, ok := done[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// PackEndpoints is the push ledger's form of a run of endpoint ids (a
// row's endpoints column): ids, given in byte order as the stores hold
// them (store.FirstResults sorts a batch), one a line. An id with a line
// break in it, or ids out of order, cannot be kept so; endpoint ids are
// UUIDs.
func PackEndpoints(ids []string) (string, error) {
	for i, id := range ids {
		if id == "" || strings.ContainsRune(id, '\n') {
			return "", fmt.Errorf("endpoint id %q cannot be kept in the push ledger", id)
		}
		if i > 0 && ids[i-1] >= id {
			return "", fmt.Errorf("endpoint ids %q and %q out of order for the push ledger", ids[i-1], id)
		}
	}
	return strings.Join(ids, "\n"), nil
}

// EachPackedEndpoint calls f with each id of a run PackEndpoints made.
func EachPackedEndpoint(packed string, f func(id string)) {
	for id := range strings.SplitSeq(packed, "\n") {
		if id != "" {
			f(id)
		}
	}
}

// InteractionCounter is the notification counter column an interaction
// kind adds to: "delivered" or "clicked".
func InteractionCounter(kind string) (string, error) {
	switch kind {
	case InteractionDelivered:
		return "delivered", nil
	case InteractionClicked:
		return "clicked", nil
	}
	return "", fmt.Errorf("unknown interaction kind %q", kind)
}

// FirstResults checks a batch of push results and keeps the first result
// of each endpoint, sorted by endpoint id (the order stores lock rows in).
// Both stores record exactly what it returns.
func FirstResults(results []PushResult) ([]PushResult, error) {
	rs := make([]PushResult, 0, len(results))
	for _, r := range results {
		switch r.Outcome {
		case OutcomeSent, OutcomeFailed, OutcomePruned:
		default:
			return nil, fmt.Errorf("unknown outcome %q for endpoint %s", r.Outcome, r.EndpointID)
		}
		rs = append(rs, r)
	}
	// Stable: of the results of one endpoint the first stays first, and
	// CompactFunc keeps it.
	slices.SortStableFunc(rs, func(a, b PushResult) int { return strings.Compare(a.EndpointID, b.EndpointID) })
	return slices.CompactFunc(rs, func(a, b PushResult) bool { return a.EndpointID == b.EndpointID }), nil
}

// EditTags applies a label change to the JSON object of a subscriber's
// labels: set adds or replaces (a null value is ""), remove deletes.
func EditTags(raw []byte, set map[string]string, remove []string) ([]byte, error) {
	tags := map[string]string{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &tags); err != nil {
			return nil, fmt.Errorf("reading labels: %w", err)
		}
	}
	maps.Copy(tags, set)
	for _, k := range remove {
		delete(tags, k)
	}
	return json.Marshal(tags)
}

// TagValueCount is how many people carry one value of one label.
type TagValueCount struct {
	Key   string
	Value string
	Count int64
}

// TagFacets assembles the tag facets of the given keys (in their order)
// from value counts sorted by key and then by count, most frequent first:
// up to limit values per key.
func TagFacets(keys []FacetValue, vals []TagValueCount, limit int) []TagFacet {
	byKey := make(map[string][]string, len(keys))
	for _, v := range vals {
		if len(byKey[v.Key]) < limit {
			byKey[v.Key] = append(byKey[v.Key], v.Value)
		}
	}
	out := make([]TagFacet, 0, len(keys))
	for _, k := range keys {
		values := byKey[k.Value]
		if values == nil {
			values = []string{}
		}
		out = append(out, TagFacet{Key: k.Value, Count: k.Count, Values: values})
	}
	return out
}

// locations caches the zones time.LoadLocation found (it reads the zone
// database on every call); only real zones are kept, so browsers sending
// made-up names cannot grow it.
var locations sync.Map // name -> *time.Location

// Location returns the named IANA time zone; an empty or unknown name is
// UTC.
func Location(name string) *time.Location {
	if name == "" {
		return time.UTC
	}
	if l, ok := locations.Load(name); ok {
		return l.(*time.Location)
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	locations.Store(name, l)
	return l
}

// LocalHour is the hour of at on the wall clock of the first of zones
// that is set (a subscriber's, then its website's), else UTC.
func LocalHour(at time.Time, zones ...string) int {
	for _, z := range zones {
		if z != "" {
			return at.In(Location(z)).Hour()
		}
	}
	return at.UTC().Hour()
}

// SortWaves orders waves as DueWaves returns them: earliest due first,
// then by notification and wave.
func SortWaves(ws []Wave) {
	slices.SortFunc(ws, func(a, b Wave) int {
		if c := a.Due.Compare(b.Due); c != 0 {
			return c
		}
		if c := strings.Compare(a.NotificationID, b.NotificationID); c != 0 {
			return c
		}
		return a.Wave - b.Wave
	})
}

// SortZones orders zones as AudienceZones returns them: by time zone name
// (byte order), then unknown smart hour first, then by hour.
func SortZones(zs []Zone) {
	slices.SortFunc(zs, func(a, b Zone) int {
		if c := strings.Compare(a.Timezone, b.Timezone); c != 0 {
			return c
		}
		switch {
		case a.SmartHour == nil && b.SmartHour == nil:
			return 0
		case a.SmartHour == nil:
			return -1
		case b.SmartHour == nil:
			return 1
		}
		return *a.SmartHour - *b.SmartHour
	})
}

// ProvesEndpoint reports whether auth, given by a browser renewing its
// subscription, is the stored auth secret of the endpoint it replaces, in
// constant time.
func ProvesEndpoint(stored, auth string) bool {
	return auth != "" && subtle.ConstantTimeCompare([]byte(stored), []byte(auth)) == 1
}
