package bus

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The pending collector counts the unacknowledged messages of each topic,
// the bus topics at zero when none waits; a message handled and
// acknowledged is no longer counted.
func TestEmbeddedPendingCollector(t *testing.T) {
	b := openBus(t, filepath.Join(t.TempDir(), "bus.db"))
	defer b.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(b.PendingCollector())
	expect := func(intents, shards int) {
		t.Helper()
		want := `
# HELP relaybell_bus_pending_messages ` + pendingHelp + `
# TYPE relaybell_bus_pending_messages gauge
relaybell_bus_pending_messages{topic="intents"} ` + strconv.Itoa(intents) + `
relaybell_bus_pending_messages{topic="shards"} ` + strconv.Itoa(shards) + `
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "relaybell_bus_pending_messages"); err != nil {
			t.Fatal(err)
		}
	}
	expect(0, 0)
	ctx := context.Background()
	for range 3 {
		if err := b.Publish(ctx, Intents, "k", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	expect(3, 0)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go b.Consume(cctx, Intents, "g", 1, func(context.Context, Message) error { return nil })
	waitPending(t, b, Intents, 0)
	expect(0, 0)
}
