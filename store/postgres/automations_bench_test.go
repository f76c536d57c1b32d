package postgres

import (
	"testing"

	"github.com/relaybell/relaybell/store/sqlstore"
	"github.com/relaybell/relaybell/store/storetest"
)

// BenchmarkTriggerOneAutomation starts runs of one automation for 5,000
// people from 32 goroutines. sharded is the store as it is (the run counts
// spread over dialect.CounterShards rows); hot-row counts every run in one
// row, as the automation's own row did before version 24: every trigger
// waited for the one before it to commit.
func BenchmarkTriggerOneAutomation(b *testing.B) {
	hot := dialect
	hot.CounterShards = 1
	for _, bc := range []struct {
		name string
		d    sqlstore.Dialect
	}{{"sharded", dialect}, {"hot-row", hot}} {
		b.Run(bc.name, func(b *testing.B) {
			s := benchStore(b)
			s.Store = sqlstore.New(s.DB(), bc.d, nil)
			const people = 5000
			rows := storetest.SeedRows(people)
			seedRows(b, s, rows)
			ids := make([]string, 0, people)
			for _, r := range rows {
				ids = append(ids, r.SubscriberID)
			}
			storetest.BenchTriggerOneAutomation(b, s, ids)
		})
	}
}
