package postgres

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/storetest"
)

// backendCPU sums the CPU time of the PostgreSQL backends of the
// connections named app (their /proc stat: PostgreSQL runs on this
// machine in the benchmarks).
func backendCPU(b *testing.B, s *Store, app string) time.Duration {
	b.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var total time.Duration
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			b.Fatal(err)
		}
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue // gone
		}
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
	}
	return total
}

// BenchmarkRegisterCPU registers browsers one after the other and reports
// the CPU of the store's PostgreSQL backends per registration
// (pg-cpu-µs/op): "again" is a known browser of a person registering
// again with its external id, as the SDK does on each page view; "new" a
// browser never seen, without one.
//
// The "-batch16" and "-batch32" variants register them 16 or 32 at a
// time through UpsertSubscriptions, as the API's group commit does under
// load: what a batch costs whatever its size shows in the difference
// (docs/scale-out.md, "Registrations: what a batch costs (stop 62)").
func BenchmarkRegisterCPU(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		again bool
		batch int
	}{{true, 1}, {false, 1}, {true, 16}, {false, 16}, {true, 32}, {false, 32}} {
		again := bc.again
		name := "new"
		if again {
			name = "again"
		}
		if bc.batch > 1 {
			name += "-batch" + strconv.Itoa(bc.batch)
		}
		b.Run(name, func(b *testing.B) {
			s, app := benchStoreAs(b, "regbench")
			input := func(i int) store.SubscriptionInput {
				in := store.SubscriptionInput{WebsiteID: storetest.BenchWebsite, P256dh: "BP256", Auth: "auth",
					Endpoint: "https://push.example/" + uuid.NewString(), Device: "desktop", UserAgent: "Chrome",
					Visit: store.VisitWeight, SiteTimezone: "UTC", At: time.Now()}
				if again {
					in.Endpoint, in.ExternalID = "https://push.example/p-"+strconv.Itoa(i%200), "p-"+strconv.Itoa(i%200)
				}
				return in
			}
			if again {
				for i := range 200 {
					if _, err := s.UpsertSubscription(ctx, input(i)); err != nil {
						b.Fatal(err)
					}
				}
			}
			before := backendCPU(b, s, app)
			b.ResetTimer()
			for i := 0; i < b.N; i += bc.batch {
				if bc.batch == 1 {
					if _, err := s.UpsertSubscription(ctx, input(i)); err != nil {
						b.Fatal(err)
					}
					continue
				}
				list := make([]store.SubscriptionInput, 0, bc.batch)
				for j := i; j < min(i+bc.batch, b.N); j++ {
					list = append(list, input(j))
				}
				if _, err := s.UpsertSubscriptions(ctx, list); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((backendCPU(b, s, app)-before).Microseconds())/float64(b.N), "pg-cpu-µs/op")
		})
	}
}
