package kafka

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/relaybell/relaybell/bus"
)

// The lag collector reports, for each group this bus consumes in, the
// records of its topic not yet committed: all of them while the handler
// holds the first, none once it lets them through. A bus that consumes
// nothing reports nothing.
func TestLagCollector(t *testing.T) {
	b := openTest(t, testConfig(newCluster(t)))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(b.LagCollector())
	if n, err := testutil.GatherAndCount(reg, "relaybell_bus_consumer_lag"); err != nil || n != 0 {
		t.Fatalf("before consuming: %d series (%v), want none", n, err)
	}

	const records = 20
	for i := range records {
		if err := b.Publish(context.Background(), bus.Intents, fmt.Sprintf("website-%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(ctx, bus.Intents, "lagtest", 1, func(ctx context.Context, m bus.Message) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	lag := func() string {
		var sb strings.Builder
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					fmt.Fprintf(&sb, "%s=%s ", l.GetName(), l.GetValue())
				}
				fmt.Fprintf(&sb, "%v", m.GetGauge().GetValue())
			}
		}
		return sb.String()
	}
	want := fmt.Sprintf("group=lagtest topic=%s %d", bus.Intents, records)
	waitFor(t, "the lag of every record", func() bool { return lag() == want })
	close(release)
	want = fmt.Sprintf("group=lagtest topic=%s 0", bus.Intents)
	waitFor(t, "no lag once handled and committed", func() bool { return lag() == want })
}
