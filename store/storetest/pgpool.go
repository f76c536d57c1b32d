package storetest

// The pool of migrated PostgreSQL store schemas (PostgresStoreSchema).
//
// Migrating a new schema is most of what a PostgreSQL test costs: the
// migrations create about seventy tables with their indexes and triggers
// in one transaction, a second or more on a busy two-core machine, and
// dropping the schema afterwards takes a few hundred milliseconds more.
// A schema whose test has ended is emptied instead (every row deleted,
// the rows the migrations seed put back, identities restarted: one
// transaction of small deletes) and handed to the next test, which finds
// it as a new store would be. A schema that cannot be emptied (a role
// that may not turn triggers off, say) is dropped.
//
// Schemas are named rb_pool_<pid>_<token>_<n>, the token random for each
// process: pids wrap (at pid_max), and a later process with an earlier
// one's pid would otherwise name its new schemas as that one's left
// behind (the sweep keeps the schemas of its own pid). A process leaves
// its idle ones behind when it exits; the next process to use the pool
// drops those of processes no longer running.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresStoreSchema returns a schema of the test's own in PostgresDSN,
// migrated by migrate (which opens a store on the schema and closes it)
// and holding what a new store holds: a new one, or one of this process's
// whose test ended, emptied (see pgpool). It goes back to the pool when
// the test ends, after the cleanups the test registered later (the stores
// it opened on it are closed by then). Without a reachable PostgreSQL the
// test fails, or is skipped under -short. A test that needs an empty
// schema (migrations) takes PostgresSchema.
func PostgresStoreSchema(t testing.TB, migrate func(ctx context.Context, schema string) error) string {
	t.Helper()
	ctx := context.Background()
	admin := connect(t)
	defer admin.Close(ctx)
	schema, fresh, err := pool.take(ctx, admin)
	if err != nil {
		t.Fatalf("store schema: %v", err)
	}
	if err := pool.prepare(ctx, admin, schema, fresh, migrate); err != nil {
		pool.drop(ctx, admin, schema)
		t.Fatalf("store schema: %v", err)
	}
	t.Cleanup(func() {
		admin, err := pgx.Connect(ctx, PostgresDSN())
		if err != nil {
			t.Errorf("returning schema %s: %v", schema, err)
			return
		}
		defer admin.Close(ctx)
		pool.give(ctx, admin, schema)
	})
	return schema
}

func connect(t testing.TB) *pgx.Conn {
	t.Helper()
	admin, err := pgx.Connect(context.Background(), PostgresDSN())
	if err != nil {
		if testing.Short() {
			t.Skipf("PostgreSQL unreachable (-short): %v", err)
		}
		t.Fatalf("connecting to PostgreSQL at %s (set RELAYBELL_TEST_POSTGRES, or -short to skip): %v", PostgresDSN(), err)
	}
	return admin
}

// pool is the process's schemas.
var pool = &schemas{prefix: "rb_pool_" + strconv.Itoa(os.Getpid()) + "_" + processToken() + "_"}

// processToken is a random name part of this process's schemas.
func processToken() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

type schemas struct {
	prefix string

	mu      sync.Mutex
	swept   bool              // the schemas of exited processes dropped
	next    int               // the number of the next new schema
	idle    []string          // emptied schemas
	tables  []string          // the store's tables, schema_migrations aside
	seeds   map[string]string // a table's rows after the migrations, as JSON
	ids     [][2]string       // (table, column) of identity columns
	learned bool              // tables, seeds and ids are known
}

// take returns an idle schema, or creates an empty one (fresh).
func (p *schemas) take(ctx context.Context, admin *pgx.Conn) (schema string, fresh bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.swept {
		p.swept = true
		p.sweep(ctx, admin)
	}
	if n := len(p.idle); n > 0 {
		schema = p.idle[n-1]
		p.idle = p.idle[:n-1]
		return schema, false, nil
	}
	p.next++
	schema = p.prefix + strconv.Itoa(p.next)
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		return "", false, fmt.Errorf("creating schema: %w", err)
	}
	return schema, true, nil
}

// sweep drops the pooled schemas of processes no longer running.
func (p *schemas) sweep(ctx context.Context, admin *pgx.Conn) {
	rows, err := admin.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'rb\_pool\_%'`)
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, name := range names {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(name, "rb_pool_"), "_")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue // not ours to judge, or its process runs
		}
		admin.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`)
	}
}

// prepare migrates a new schema (an idle one is migrated already) and,
// the first time, learns what an emptied schema must hold.
func (p *schemas) prepare(ctx context.Context, admin *pgx.Conn, schema string, fresh bool, migrate func(ctx context.Context, schema string) error) error {
	if !fresh {
		return nil
	}
	if err := migrate(ctx, schema); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.learned {
		return nil
	}
	return p.learn(ctx, admin, schema)
}

// learn reads the tables of a just-migrated schema, their rows (what the
// migrations seed) and their identity columns.
func (p *schemas) learn(ctx context.Context, admin *pgx.Conn, schema string) error {
	rows, err := admin.Query(ctx, `SELECT tablename FROM pg_tables
		WHERE schemaname = $1 AND tablename <> 'schema_migrations' ORDER BY 1`, schema)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	seeds := map[string]string{}
	for _, table := range tables {
		var rows *string
		if err := admin.QueryRow(ctx, `SELECT json_agg(t)::text FROM `+qualified(schema, table)+` t`).Scan(&rows); err != nil {
			return err
		}
		if rows != nil {
			seeds[table] = *rows
		}
	}
	rows, err = admin.Query(ctx, `SELECT c.relname, a.attname FROM pg_attribute a
		JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND a.attidentity <> '' AND NOT a.attisdropped ORDER BY 1, 2`, schema)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var id [2]string
		err := r.Scan(&id[0], &id[1])
		return id, err
	})
	if err != nil {
		return err
	}
	p.tables, p.seeds, p.ids, p.learned = tables, seeds, ids, true
	return nil
}

// give empties a schema whose test ended and makes it idle, or drops it.
// A schema given was prepared: what an emptied one holds is learned.
func (p *schemas) give(ctx context.Context, admin *pgx.Conn, schema string) {
	if p.settle(ctx, admin, schema) != nil || p.empty(ctx, admin, schema) != nil {
		p.drop(ctx, admin, schema)
		return
	}
	p.mu.Lock()
	p.idle = append(p.idle, schema)
	p.mu.Unlock()
}

// settle ends what still works in the schema: a statement whose client
// went away (a cancelled request's connection is closed, not waited for)
// can still be running, and would commit its rows after the schema was
// emptied, into the next test's. Its backend holds a lock on the tables
// it uses until it ends; it is terminated (its transaction rolls back)
// and waited for.
func (p *schemas) settle(ctx context.Context, admin *pgx.Conn, schema string) error {
	for range 100 {
		var busy int
		if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(l.pid)) FROM (SELECT DISTINCT l.pid
			FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE c.relnamespace = to_regnamespace($1) AND l.pid <> pg_backend_pid()) l`, schema).Scan(&busy); err != nil {
			return err
		}
		if busy == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("schema %s: backends still at work", schema)
}

// empty deletes every row of the schema, with the triggers off (the
// foreign keys' included: nothing is left to refer to), puts back the
// migrations' rows and restarts the identities, in one transaction.
func (p *schemas) empty(ctx context.Context, admin *pgx.Conn, schema string) error {
	var b strings.Builder
	b.WriteString("BEGIN;\nSET LOCAL session_replication_role = replica;\n")
	for _, table := range p.tables {
		fmt.Fprintf(&b, "DELETE FROM %s;\n", qualified(schema, table))
	}
	for _, table := range p.tables {
		if rows, ok := p.seeds[table]; ok {
			fmt.Fprintf(&b, "INSERT INTO %[1]s OVERRIDING SYSTEM VALUE SELECT * FROM json_populate_recordset(NULL::%[1]s, %[2]s);\n",
				qualified(schema, table), quote(rows))
		}
	}
	for _, id := range p.ids {
		fmt.Fprintf(&b, "SELECT setval(pg_get_serial_sequence(%s, %s), 1, false);\n",
			quote(qualified(schema, id[0])), quote(id[1]))
	}
	b.WriteString("COMMIT;")
	// Without arguments Exec sends the whole text as one simple query: one
	// round trip, one transaction.
	if _, err := admin.Exec(ctx, b.String()); err != nil {
		admin.Exec(ctx, "ROLLBACK")
		return err
	}
	return nil
}

func (p *schemas) drop(ctx context.Context, admin *pgx.Conn, schema string) {
	admin.Exec(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`)
}

func qualified(schema, table string) string {
	return pgx.Identifier{schema, table}.Sanitize()
}

// quote is a SQL string literal.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
