package bench

import (
	"context"
	"flag"
	"testing"
)

var audience = flag.Int("audience", 2000, "browsers subscribed in BenchmarkBroadcastEmbedded")

// BenchmarkBroadcastEmbedded measures one broadcast on the embedded default
// and the bare sender in the same run; the metric that matters is
// ratio-to-bare. Run: go test -run '^$' -bench BroadcastEmbedded -benchtime 1x ./bench/ -audience 10000
func BenchmarkBroadcastEmbedded(b *testing.B) {
	for b.Loop() {
		res, err := Embedded(context.Background(), Options{Audience: *audience})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.PushesPerSec, "pushes/s")
		b.ReportMetric(res.BarePerSec, "bare-pushes/s")
		b.ReportMetric(res.Ratio, "ratio-to-bare")
		b.ReportMetric(float64(res.FirstPush.Milliseconds()), "ms-to-first-push")
		b.ReportMetric(res.PeakHeapMiB, "peak-heap-MiB")
		b.Log(res)
	}
}

// TestEmbeddedBroadcastDeliversEveryPush runs a small broadcast end to end
// through the bench harness so the harness itself stays correct.
func TestEmbeddedBroadcastDeliversEveryPush(t *testing.T) {
	res, err := Embedded(context.Background(), Options{Audience: 200, Concurrency: 32})
	if err != nil {
		t.Fatal(err)
	}
	if res.Audience != 200 || res.PushesPerSec <= 0 || res.BarePerSec <= 0 || res.FirstPush > res.EndToEnd {
		t.Fatalf("result %+v", res)
	}
}
