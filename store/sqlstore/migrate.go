package sqlstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

// migrations are the schema changes since the store became one: each a
// numbered file NNNN_name.sql that both engines run, or, where the DDL
// really differs, NNNN_name.sqlite.sql and NNNN_name.postgres.sql (an
// engine with no file of a version has nothing to do for it). The versions
// before (SQLite 1-12, PostgreSQL 1-13) stay in each engine's own folder.
//
//go:embed migrations
var migrations embed.FS

// migrationLock is the Lock key that serialises migrations of one schema.
const migrationLock = 0x52424d47 // "RBMG"

type migration struct {
	version int
	name    string
	fsys    fs.FS
}

// migrationList returns the migrations of engine in version order: the
// engine's own (older) ones in legacy, then the shared folder's.
func migrationList(engine string, legacy fs.FS) ([]migration, error) {
	var list []migration
	add := func(fsys fs.FS, dir string, shared bool) error {
		files, err := fs.Glob(fsys, dir+"/*.sql")
		if err != nil {
			return fmt.Errorf("listing migrations: %w", err)
		}
		for _, f := range files {
			base := strings.TrimPrefix(f, dir+"/")
			if shared {
				stem := strings.TrimSuffix(base, ".sql")
				if i := strings.LastIndexByte(stem, '.'); i >= 0 && stem[i+1:] != engine {
					continue // another engine's
				}
			}
			num, _, ok := strings.Cut(base, "_")
			v, err := strconv.Atoi(num)
			if !ok || err != nil || v <= 0 {
				return fmt.Errorf("migration %s: name must start with a positive version and '_'", base)
			}
			list = append(list, migration{v, f, fsys})
		}
		return nil
	}
	if err := add(legacy, "migrations", false); err != nil {
		return nil, err
	}
	if err := add(migrations, "migrations", true); err != nil {
		return nil, err
	}
	sort.Slice(list, func(i, j int) bool { return list[i].version < list[j].version })
	for i := 1; i < len(list); i++ {
		if list[i].version == list[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share a version", list[i-1].name, list[i].name)
		}
	}
	return list, nil
}

// Migrate applies the migrations newer than the recorded version, all in
// one transaction that holds the migration lock, so that nodes starting
// together apply each once and none sees a half-made schema. It refuses a
// database migrated by a newer binary. legacy holds the engine's own
// migrations (a folder named migrations).
func (s *Store) Migrate(ctx context.Context, legacy fs.FS) error {
	list, err := migrationList(s.d.Engine, legacy)
	if err != nil {
		return err
	}
	var applied []migration
	err = s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		applied = nil
		if err := s.d.Lock(ctx, tx, migrationLock); err != nil {
			return fmt.Errorf("locking: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			applied_at `+s.d.TimeType+` NOT NULL
		)`); err != nil {
			return fmt.Errorf("creating schema_migrations: %w", err)
		}
		var newest int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&newest); err != nil {
			return fmt.Errorf("reading schema version: %w", err)
		}
		if len(list) > 0 && newest > list[len(list)-1].version {
			return fmt.Errorf("database schema version %d is newer than this binary's %d", newest, list[len(list)-1].version)
		}
		for _, m := range list {
			if m.version <= newest {
				continue
			}
			body, err := fs.ReadFile(m.fsys, m.name)
			if err != nil {
				return fmt.Errorf("reading migration %s: %w", m.name, err)
			}
			// Without arguments Exec runs every statement of the file.
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("applying migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`,
				m.version, s.d.Time(time.Now())); err != nil {
				return fmt.Errorf("recording migration %s: %w", m.name, err)
			}
			applied = append(applied, m)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrating the %s schema: %w", s.d.Engine, err)
	}
	for _, m := range applied {
		s.log.Info("applied migration", "engine", s.d.Engine, "version", m.version, "file", m.name)
	}
	return nil
}

// MigrationVersions lists the versions Migrate applies on engine, in
// order, for the engines' tests.
func MigrationVersions(engine string, legacy fs.FS) ([]int, error) {
	list, err := migrationList(engine, legacy)
	if err != nil {
		return nil, err
	}
	vs := make([]int, len(list))
	for i, m := range list {
		vs[i] = m.version
	}
	return vs, nil
}
