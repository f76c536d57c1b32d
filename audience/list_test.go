package audience

import (
	"errors"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

func TestCursor(t *testing.T) {
	k := store.PersonKey{CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC), ID: "6f1c2a9e-0000-4000-8000-000000000001"}
	c := encodeCursor(k, "w&country=FR")
	got, err := decodeCursor(c, "w&country=FR")
	if err != nil || got != k {
		t.Fatalf("decodeCursor = %+v, %v; want %+v", got, err, k)
	}
	for _, bad := range []string{"", "%%%", "AAAA", c[:len(c)-40]} {
		if _, err := decodeCursor(bad, "w&country=FR"); !errors.Is(err, ErrInvalidCursor) {
			t.Errorf("decodeCursor(%q) = %v, want ErrInvalidCursor", bad, err)
		}
	}
	if _, err := decodeCursor(c, "w&country=DE"); !errors.Is(err, ErrInvalidCursor) {
		t.Errorf("a cursor of other filters was accepted: %v", err)
	}
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(store.PersonKey{CreatedAt: time.Unix(1, 0), ID: "6f1c2a9e-0000-4000-8000-000000000001"}, "fp"))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := decodeCursor(s, "fp")
		if err == nil && encodeCursor(k, "fp") != s {
			t.Fatalf("decoded %q into %+v, which encodes differently", s, k)
		}
	})
}
