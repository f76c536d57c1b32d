package store

import (
	"strings"
	"testing"
)

// A run of the push ledger packs ids in byte order, one a line, and reads
// back as it was; ids it could not read back are refused.
func TestPackEndpoints(t *testing.T) {
	packed, err := PackEndpoints([]string{"a-1", "a-2", "b"})
	if err != nil || packed != "a-1\na-2\nb" {
		t.Fatalf("PackEndpoints = %q, %v", packed, err)
	}
	var back []string
	EachPackedEndpoint(packed, func(id string) { back = append(back, id) })
	if strings.Join(back, ",") != "a-1,a-2,b" {
		t.Fatalf("read back %q", back)
	}
	for _, bad := range [][]string{{"b", "a"}, {"a", "a"}, {""}, {"a\nb"}} {
		if _, err := PackEndpoints(bad); err == nil {
			t.Errorf("PackEndpoints(%q) took it", bad)
		}
	}
}
