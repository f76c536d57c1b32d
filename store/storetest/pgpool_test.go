package storetest

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
)

// An earlier test process that had this process's pid (pids wrap at
// pid_max, 32768 here) and left its idle schemas behind does not stop the
// pool from making new ones: the sweep keeps schemas named with this pid,
// so the names must not be the same.
func TestPoolAfterAnEarlierProcessOfThisPID(t *testing.T) {
	ctx := context.Background()
	admin := connect(t)
	defer admin.Close(ctx)
	var stale []string
	for n := 1; n <= 3; n++ {
		stale = append(stale, "rb_pool_"+strconv.Itoa(os.Getpid())+"_"+strconv.Itoa(n))
	}
	for _, name := range stale {
		if _, err := admin.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{name}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		admin := connect(t)
		defer admin.Close(ctx)
		for _, name := range stale {
			admin.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`)
		}
	})
	schema := PostgresStoreSchema(t, func(ctx context.Context, schema string) error { return nil })
	for _, name := range stale {
		if schema == name {
			t.Fatalf("the pool handed out %s, an earlier process's schema", schema)
		}
	}
}
