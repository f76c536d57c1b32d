package bustest_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/relaybell/relaybell/bus"
	"github.com/relaybell/relaybell/bus/bustest"
)

// TestEmbeddedConformance runs the suite against the embedded bus. It lives
// here rather than in package bus because bus's internal tests cannot import
// bustest (which imports bus). The embedded bus's retry delay is unexported
// (1 s), so HandlerErrorRedelivers takes about 1 s.
func TestEmbeddedConformance(t *testing.T) {
	path := bustest.PerTest(func(t *testing.T) string { return filepath.Join(t.TempDir(), "bus.db") })
	bustest.Run(t, func(t *testing.T) bus.Bus {
		b, err := bus.OpenEmbedded(context.Background(), path(t), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}
