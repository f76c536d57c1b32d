package automations

import (
	"errors"
	"testing"

	"github.com/relaybell/relaybell/store"
)

// A timer that names no person never becomes a send: its empty target
// would be everyone.
func TestMessageNeedsAPerson(t *testing.T) {
	_, err := message(t.Context(), Definition{}, store.Timer{AutomationID: "a"}, store.Website{}, start)
	if !errors.Is(err, errNoPerson) {
		t.Fatalf("message without a person: %v", err)
	}
}
