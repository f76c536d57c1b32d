// Package stmtjournal keeps SQLite's statement journals in memory up to
// Spill bytes, for every SQLite file of the process. Import it from each
// package that opens one (its init runs before any connection exists).
//
// Inside a transaction, a statement that may change many rows and may
// fail part-way (a constraint, a foreign key) keeps the original of each
// page it changes in a statement journal, to undo itself alone. SQLite
// keeps that journal in memory up to 64 KiB, 16 pages, and past that in a
// temporary file it opens, writes (two writes a page) and closes with the
// statement. A batch of registrations changes more pages than that in
// one statement: in a profile of the embedded default registering 3,000
// browsers a second, the statement journals' files were a tenth of the
// process's CPU, more than the log's own writes (docs/scale-out.md,
// "Statement journals in memory (stop 55)").
//
// Spill bounds what a statement holds in memory: the store's batches
// change a few hundred pages at most; a rare statement that changes more
// (deleting a website and, by cascade, its people) still goes to a file
// past it.
package stmtjournal

import (
	"fmt"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Spill is the size a statement journal reaches in memory before it goes
// to a temporary file (SQLITE_CONFIG_STMTJRNL_SPILL).
const Spill = 16 << 20

// configErr is why the setting failed, nil once it is in force.
var configErr = configure()

func configure() error {
	tls := libc.NewTLS()
	defer tls.Close()
	va := libc.NewVaList(int32(Spill))
	defer libc.Xfree(tls, va)
	// Refused (SQLITE_MISUSE) once SQLite is initialised, that is once any
	// connection was opened: so it runs in this package's init.
	if rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_STMTJRNL_SPILL, va); rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("sqlite: setting the statement journals' spill to %d bytes: code %d", Spill, rc)
	}
	return nil
}

// Err is nil when statement journals spill at Spill bytes; otherwise
// why not (SQLite was initialised before this package, by a connection
// opened in an init of its own).
func Err() error { return configErr }
