package storetest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// PreviousMigration is one file of an engine's schema migrations as the
// last release before the engines shared one list shipped it: the engine's
// testdata/previous, which its upgrade tests build databases with.
type PreviousMigration struct {
	Version int // the file's leading number, which that release recorded
	File    string
	SQL     string
}

// PreviousMigrations reads the .sql files of dir in name order (the order
// that release applied them in), those of versions up to upto.
func PreviousMigrations(t testing.TB, dir string, upto int) []PreviousMigration {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("listing %s: %d files, %v", dir, len(files), err)
	}
	slices.Sort(files)
	var list []PreviousMigration
	for _, f := range files {
		num, _, _ := strings.Cut(filepath.Base(f), "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			t.Fatalf("%s: no leading version: %v", f, err)
		}
		if v > upto {
			break
		}
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, PreviousMigration{Version: v, File: filepath.Base(f), SQL: string(body)})
	}
	return list
}

// SameSchema fails t unless got, a schema described one line per object,
// equals want, naming the first lines that differ.
func SameSchema(t testing.TB, want, got []string) {
	t.Helper()
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Fatalf("schema differs at line %d of %d (fresh) and %d (upgraded):\nfresh:    %s\nupgraded: %s", i+1, len(want), len(got), w, g)
		}
	}
}
