package sqlstore

import (
	"strings"
	"testing"
	"testing/fstest"
)

// The two engines' DDL as far as these tests use it.
var (
	testSQLite   = Dialect{Engine: "sqlite", DDL: DDL{Time: "INTEGER", Bool: "INTEGER", False: "0", WithoutRowid: " WITHOUT ROWID"}}
	testPostgres = Dialect{Engine: "postgres", DDL: DDL{Time: "timestamptz", Bool: "boolean", False: "false"}}
)

// A version renders on each engine as its shared file with the engine's
// blocks, or as the engine's file alone, or as nothing.
func TestMigrationRender(t *testing.T) {
	fsys := fstest.MapFS{
		"migrations/0001_init.sql": {Data: []byte(
			"CREATE TABLE t (at {{.Time}}, on {{.Bool}} DEFAULT {{.False}}){{.WithoutRowid}};\n{{template \"sync\" .}}\n")},
		"migrations/0001_init.sqlite.sql":     {Data: []byte("-- SQLite's\n{{define \"sync\"}}CREATE TRIGGER s;{{end}}\n")},
		"migrations/0001_init.postgres.sql":   {Data: []byte("{{define \"sync\"}}CREATE FUNCTION f; CREATE TRIGGER p;{{end}}")},
		"migrations/0002_search.postgres.sql": {Data: []byte("CREATE INDEX i ON t (at);")},
		"migrations/0003_plain.sql":           {Data: []byte("ALTER TABLE t ADD COLUMN n INTEGER;")},
	}
	list, err := migrationList(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"sqlite": {
			"CREATE TABLE t (at INTEGER, on INTEGER DEFAULT 0) WITHOUT ROWID;\nCREATE TRIGGER s;\n",
			"",
			"ALTER TABLE t ADD COLUMN n INTEGER;",
		},
		"postgres": {
			"CREATE TABLE t (at timestamptz, on boolean DEFAULT false);\nCREATE FUNCTION f; CREATE TRIGGER p;\n",
			"CREATE INDEX i ON t (at);",
			"ALTER TABLE t ADD COLUMN n INTEGER;",
		},
	}
	for _, d := range []Dialect{testSQLite, testPostgres} {
		if len(list) != len(want[d.Engine]) {
			t.Fatalf("%d migrations, want %d", len(list), len(want[d.Engine]))
		}
		for i, m := range list {
			if m.version != i+1 {
				t.Fatalf("migration %d has version %d", i, m.version)
			}
			got, err := m.render(d)
			if err != nil {
				t.Fatalf("%s on %s: %v", m.name, d.Engine, err)
			}
			if got != want[d.Engine][i] {
				t.Fatalf("%s on %s:\n%q\nwant\n%q", m.name, d.Engine, got, want[d.Engine][i])
			}
		}
	}
}

// Files that break the rules are refused with the file named.
func TestMigrationRefused(t *testing.T) {
	f := func(files map[string]string, want string) {
		t.Helper()
		fsys := fstest.MapFS{}
		for name, body := range files {
			fsys["migrations/"+name] = &fstest.MapFile{Data: []byte(body)}
		}
		list, err := migrationList(fsys)
		for _, m := range list {
			if err != nil {
				break
			}
			_, err = m.render(testSQLite)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v; want one containing %q", err, want)
		}
	}
	f(map[string]string{"0001_a.sql": "", "0001_b.sql": ""}, "migrations 0001_a and 0001_b share a version")
	f(map[string]string{"0001_a.mysql.sql": ""}, `migrations/0001_a.mysql.sql: "mysql" is no engine`)
	f(map[string]string{"init.sql": ""}, "migrations/init.sql: name must start with a positive version")
	f(map[string]string{"0000_a.sql": ""}, "migrations/0000_a.sql: name must start with a positive version")
	// SQL beside a shared file is outside the blocks it may only define.
	f(map[string]string{"0001_a.sql": `{{template "x" .}}`, "0001_a.sqlite.sql": "{{define \"x\"}}{{end}}\nDROP TABLE t;"},
		`migrations/0001_a.sqlite.sql: SQL outside a {{define}} block: "DROP TABLE t;"`)
	// A block the engine does not define.
	f(map[string]string{"0001_a.sql": `{{template "x" .}}`, "0001_a.postgres.sql": `{{define "x"}}{{end}}`}, `template "x" not defined`)
	// A placeholder the DDL does not have.
	f(map[string]string{"0001_a.sql": "CREATE TABLE t (a {{.Text}});"}, "can't evaluate field Text")
}
