// Package pgtest gives a test a migrated PostgreSQL store of its own:
// storetest.PostgresStoreSchema with the store's migrations, as a DSN.
// (store/postgres's own tests, which this package cannot serve, call
// storetest.PostgresStoreSchema themselves.)
package pgtest

import (
	"context"
	"testing"

	"github.com/relaybell/relaybell/store/postgres"
	"github.com/relaybell/relaybell/store/storetest"
)

// DSN returns storetest.PostgresDSN with its search_path on a schema of
// the test's own, migrated and holding what a new store holds.
func DSN(t testing.TB) string {
	t.Helper()
	return dsnOf(t, storetest.PostgresStoreSchema(t, func(ctx context.Context, schema string) error {
		st, err := postgres.Open(ctx, dsnOf(t, schema), nil)
		if err != nil {
			return err
		}
		return st.Close()
	}))
}

func dsnOf(t testing.TB, schema string) string {
	dsn, err := postgres.WithSearchPath(storetest.PostgresDSN(), schema)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}
