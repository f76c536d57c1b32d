package store

import "fmt"

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
