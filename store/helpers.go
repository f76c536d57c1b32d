package store

import (
	"fmt"
	"slices"
	"strings"
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
