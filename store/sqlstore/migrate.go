package sqlstore

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// migrations is the schema's history: one list of versions that both
// engines run, each version written once.
//
// # Adding a migration
//
// Write migrations/NNNN_name.sql, the next number. It is a text/template
// rendered with the engine's DDL (Dialect.DDL) as data: write a type that
// differs between the engines as its placeholder, {{.Time}}, {{.Bool}},
// {{.Bigint}}, {{.Float}}, {{.Bytes}}, {{.JSON}} or {{.JSONB}}, a boolean
// default as {{.False}}, a key of increasing numbers as {{.Serial}}, and
// end a table that SQLite should keep in key order with {{.WithoutRowid}}
// (see DDL for each). TEXT, INTEGER and the rest of the SQL mean the same
// on both engines and are written as they are.
//
// Where an engine needs SQL that no placeholder gives (a trigger's
// language, JSON functions), the shared file names a block at that place,
// {{template "sync" .}}, and NNNN_name.sqlite.sql and NNNN_name.postgres.sql
// each define it, {{define "sync"}}…{{end}}, with nothing but comments
// outside their blocks. A change one engine alone needs is that engine's
// file alone, NNNN_name.postgres.sql: the other records the version with
// nothing to do. Either is an engine exception: list it in doc.go with its
// reason.
//
// A shipped migration is never edited: databases in the field were made
// with it.
//
//go:embed migrations
var migrations embed.FS

// engines are the suffixes an engine's file of a version may have.
var engines = []string{"sqlite", "postgres"}

// migrationLock is the Lock key that serialises migrations of one schema.
const migrationLock = 0x52424d47 // "RBMG"

// A migration is one version: its shared file NNNN_name.sql and the files
// of engines that have their own, NNNN_name.<engine>.sql.
type migration struct {
	fsys    fs.FS // holding the folder migrations
	version int
	name    string // NNNN_name
	shared  bool
	engines []string
}

// migrationList returns the migrations of fsys's folder migrations in
// version order.
func migrationList(fsys fs.FS) ([]migration, error) {
	files, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("listing migrations: %w", err)
	}
	var list []migration
	for _, f := range files {
		stem := strings.TrimSuffix(strings.TrimPrefix(f, "migrations/"), ".sql")
		name, engine, _ := strings.Cut(stem, ".")
		if engine != "" && !slices.Contains(engines, engine) {
			return nil, fmt.Errorf("migration %s: %q is no engine (%s)", f, engine, strings.Join(engines, ", "))
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive version and '_'", f)
		}
		if len(list) == 0 || list[len(list)-1].name != name {
			list = append(list, migration{fsys: fsys, version: v, name: name})
		}
		m := &list[len(list)-1]
		if engine == "" {
			m.shared = true
		} else {
			m.engines = append(m.engines, engine)
		}
	}
	// Glob returns names in order, so a version's files are together.
	for i := 1; i < len(list); i++ {
		if list[i].version == list[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share a version", list[i-1].name, list[i].name)
		}
	}
	return list, nil
}

// render returns the SQL of m on the engine of d: the shared file with the
// engine's blocks, or the engine's file alone, or "" when the version has
// nothing for the engine.
func (m migration) render(d Dialect) (string, error) {
	shared := "migrations/" + m.name + ".sql"
	own := "migrations/" + m.name + "." + d.Engine + ".sql"
	hasOwn := slices.Contains(m.engines, d.Engine)
	var main string
	switch {
	case m.shared:
		main = shared
	case hasOwn:
		main = own
	default:
		return "", nil
	}
	files := []string{main}
	if m.shared && hasOwn {
		files = append(files, own)
	}
	t := template.New(main).Option("missingkey=error")
	for _, f := range files {
		body, err := fs.ReadFile(m.fsys, f)
		if err != nil {
			return "", fmt.Errorf("reading migration %s: %w", f, err)
		}
		if _, err := t.New(f).Parse(string(body)); err != nil {
			return "", fmt.Errorf("parsing migration %s: %w", f, err)
		}
	}
	if m.shared && hasOwn {
		// An engine's file beside a shared one only defines blocks.
		var outside bytes.Buffer
		if err := t.ExecuteTemplate(&outside, own, d.DDL); err != nil {
			return "", fmt.Errorf("rendering migration %s: %w", own, err)
		}
		for line := range strings.Lines(outside.String()) {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "--") {
				return "", fmt.Errorf("migration %s: SQL outside a {{define}} block: %q", own, line)
			}
		}
	}
	var sql bytes.Buffer
	if err := t.ExecuteTemplate(&sql, main, d.DDL); err != nil {
		return "", fmt.Errorf("rendering migration %s for %s: %w", main, d.Engine, err)
	}
	return sql.String(), nil
}

// Migrate applies the migrations newer than the recorded version, all in
// one transaction that holds the migration lock, so that nodes starting
// together apply each once and none sees a half-made schema. Every version
// is recorded in schema_migrations, also one with nothing to do on the
// engine. It refuses a database migrated by a newer binary. A SQLite
// database numbered as before the engines shared one list is renumbered
// first (renumberSQLite).
func (s *Store) Migrate(ctx context.Context) error {
	list, err := migrationList(migrations)
	if err != nil {
		return err
	}
	var applied []migration
	renumbered := false
	err = s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		applied, renumbered = nil, false
		if err := s.d.Lock(ctx, tx, migrationLock); err != nil {
			return fmt.Errorf("locking: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			applied_at `+s.d.DDL.Time+` NOT NULL
		)`); err != nil {
			return fmt.Errorf("creating schema_migrations: %w", err)
		}
		now := s.d.Time(time.Now())
		if s.d.Engine == "sqlite" {
			var err error
			if renumbered, err = renumberSQLite(ctx, tx, now); err != nil {
				return fmt.Errorf("renumbering schema_migrations: %w", err)
			}
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
			sql, err := m.render(s.d)
			if err != nil {
				return err
			}
			// Without arguments Exec runs every statement of the file.
			if strings.TrimSpace(sql) != "" {
				if _, err := tx.Exec(ctx, sql); err != nil {
					return fmt.Errorf("applying migration %s: %w", m.name, err)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`,
				m.version, now); err != nil {
				return fmt.Errorf("recording migration %s: %w", m.name, err)
			}
			applied = append(applied, m)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrating the %s schema: %w", s.d.Engine, err)
	}
	if renumbered {
		s.log.Info("renumbered schema_migrations into the versions both engines share", "engine", s.d.Engine)
	}
	for _, m := range applied {
		s.log.Info("applied migration", "engine", s.d.Engine, "version", m.version, "name", m.name)
	}
	return nil
}

// renumberSQLite translates the schema_migrations of a SQLite database made
// before the engines shared one list of versions, once, and reports
// whether it did. SQLite numbered its versions 1–12 on its own: it had
// nothing for PostgreSQL's 10 (the trigram search), so its 10, 11 and 12
// are the list's 11, 12 and 13; and it recorded nothing for 14 and 15
// (PostgreSQL's alone). Its schema at each version was what the list makes
// on SQLite, so only the numbers change: the three move up, and 10, 14 and
// 15 are recorded as done where a later version is.
//
// Such a database has version 10 but not 13. One numbered by the list
// never has: Migrate applies every version in one transaction, so a SQLite
// database it migrated is at 9 or below, or has 13.
func renumberSQLite(ctx context.Context, tx Conn, now any) (bool, error) {
	var legacy bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = 10)
		AND NOT EXISTS (SELECT 1 FROM schema_migrations WHERE version = 13)`).Scan(&legacy); err != nil {
		return false, err
	}
	if !legacy {
		return false, nil
	}
	for _, old := range []int{12, 11, 10} { // from the top: versions are unique
		if _, err := tx.Exec(ctx, `UPDATE schema_migrations SET version = $1 WHERE version = $2`, old+1, old); err != nil {
			return false, err
		}
	}
	for _, v := range []int{10, 14, 15} {
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at)
			SELECT $1, $2 WHERE $3 < (SELECT max(version) FROM schema_migrations)`, v, now, v); err != nil {
			return false, err
		}
	}
	return true, nil
}

// MigrationVersions lists the versions Migrate applies, in order, for the
// engines' tests.
func MigrationVersions() ([]int, error) {
	list, err := migrationList(migrations)
	if err != nil {
		return nil, err
	}
	vs := make([]int, len(list))
	for i, m := range list {
		vs[i] = m.version
	}
	return vs, nil
}
