package sqlstore

import (
	"context"
	"time"

	"github.com/relaybell/relaybell/store"
)

// Dialect is what differs between the engines, and nothing else: the store
// writes each query once, and asks the dialect only for these.
type Dialect struct {
	// Engine is "sqlite" or "postgres": it picks the engine's files of a
	// migration, and names it in messages.
	Engine string
	// DDL is what the migrations' placeholders stand for on the engine.
	DDL DDL
	// Time is the stored form of a time: SQLite keeps unix milliseconds,
	// PostgreSQL a timestamptz to the microsecond. Scanning needs no
	// dialect: the scanners of scan.go read both forms.
	Time func(t time.Time) any
	// List is the argument form of a list of strings, for In and Elems:
	// JSON text on SQLite, a text[] on PostgreSQL.
	List func(ss []string) any
	// In is the condition that the expression col is one of the list
	// argument arg (a placeholder such as $3).
	In func(col, arg string) string
	// Elems is a table of the elements of the list argument arg, with one
	// column named value, to select or join from.
	Elems func(arg string) string
	// ForUpdate locks the rows a SELECT reads, of the tables named (all
	// when none): "FOR UPDATE [OF …]" on PostgreSQL, "" on SQLite, whose
	// one writer already runs alone.
	ForUpdate func(of ...string) string
	// SkipLocked is FOR UPDATE SKIP LOCKED (OF the tables named) on
	// PostgreSQL: rows another transaction holds are passed over. "" on
	// SQLite.
	SkipLocked func(of ...string) string
	// Lock takes a lock on each key, held until tx ends, serialising the
	// transactions that take the same key (pg_advisory_xact_lock keyed by
	// the schema), in one statement, in the order given: callers that take
	// several give them sorted, so that two such callers cannot deadlock.
	// Keys are 32-bit. SQLite's one writer serialises every write: it does
	// nothing there.
	Lock func(ctx context.Context, tx Conn, keys ...int64) error
	// ContainsFold is the condition that the text expression col contains
	// the text argument arg in any letter case.
	ContainsFold func(col, arg string) string
	// MapErr turns the engine's constraint violations into the store's
	// sentinels: a duplicate into store.ErrConflict, a missing parent into
	// store.ErrNotFound. Other errors are returned as they are.
	MapErr func(err error) error
	// LockRows is ForUpdate with another lock strength ("SHARE",
	// "NO KEY UPDATE"): "FOR <strength> [OF …]" on PostgreSQL, "" on
	// SQLite. A weaker lock lets other work on the rows go on: FOR SHARE
	// readers share it, and FOR NO KEY UPDATE (what an UPDATE that leaves
	// the key takes) does not wait for foreign key checks' key-share locks.
	LockRows func(strength string, of ...string) string
	// MergeJSON is the JSON object a with the members of the object b set
	// over it: json_patch on SQLite (which would also drop the members b
	// sets to null; labels never are), jsonb's || on PostgreSQL.
	MergeJSON func(a, b string) string
	// NewSeq is what an UPDATE sets the seq column of table to, to give the
	// row a seq greater than every other's (a draft that is sent goes to
	// the top of the list): DEFAULT, the identity's next value, on
	// PostgreSQL, whose identity column takes no other; one more than the
	// largest on SQLite, whose AUTOINCREMENT never hands it out again.
	NewSeq func(table string) string
	// AudienceFrom is a hook: the FROM clause of a page of an audience walk
	// (Audience of a shard), endpoints e with their subscribers s; "" is a
	// plain join. PostgreSQL's looks each endpoint's subscriber up by key
	// (LATERAL ... OFFSET 0), where the plain join was planned as a hash
	// join over every subscriber of the store, per page
	// (BenchmarkAudience/all at 100k recipients: 30 µs a recipient with
	// the plain join, 12 with the lookup; TestAudienceLooksEachSubscriberUp
	// checks the plan).
	AudienceFrom string
	// Contains is the condition that the text expression col holds the
	// text argument arg as it is, a plain substring (no folding, no
	// wildcards): instr on SQLite, strpos on PostgreSQL. LIKE '%…%' with
	// arg's wildcards escaped would say the same on both, but SQLite's
	// LIKE reads character by character: a notification search over 2,000
	// notifications took 1.5x as long to miss and 2x as long to find a
	// page (PostgreSQL's took as long either way).
	Contains func(col, arg string) string
	// AddRateCounts is a hook: AddRateCounts' writes and reads of a
	// node's counts, in tx (keys unique, in key order); nil is an upsert
	// or a read per key and a DELETE of earlier windows per window start.
	// PostgreSQL's is one statement over unnest of three arrays
	// (BenchmarkAddRateCounts: hook against generic, 10 against 98 ms for
	// 1,000 keys).
	AddRateCounts func(ctx context.Context, tx Conn, counts []store.RateCount) ([]int64, error)
	// ScanTime is a hook: the scan destination of a time column into *t
	// (UTC), for rows read by the thousand; nil is timeDest, which reads
	// either engine's form. pgx scans a timestamptz into a *time.Time as
	// it is, where through timeDest (a sql.Scanner) it takes three
	// allocations (BenchmarkAudience: 12 a recipient).
	ScanTime func(t *time.Time) any
	// CounterShards is how many automation_counts rows each automation's
	// run counts are spread over, so that triggers for different people
	// do not all wait for one row's lock: 16 on PostgreSQL
	// (BenchmarkTriggerOneAutomation: sharded against hot-row); 0 or 1 is
	// one row, as SQLite's one writer is best served.
	CounterShards int
}

// DDL is the data the migrations are rendered with (migrate.go): a
// migration writes {{.Time}} where the engines' column types differ, and
// gets the engine's. Each field's doc gives PostgreSQL's form, then
// SQLite's.
type DDL struct {
	// Time is a time's column type: timestamptz; INTEGER (unix
	// milliseconds). Dialect.Time writes it.
	Time string
	// Bool is a boolean's column type: boolean; INTEGER (0 or 1).
	Bool string
	// False is the literal of a boolean's DEFAULT false: false; 0.
	False string
	// Bigint is a 64-bit integer's column type: bigint; INTEGER (every
	// SQLite integer has 64 bits).
	Bigint string
	// Float is a float's column type: double precision; REAL.
	Float string
	// Bytes is a byte string's column type: bytea; BLOB.
	Bytes string
	// JSON is the column type of JSON kept byte for byte as written, which
	// nothing queries inside: json; TEXT.
	JSON string
	// JSONB is the column type of JSON queried inside (labels, settings):
	// jsonb; TEXT, read with SQLite's JSON functions.
	JSONB string
	// Serial is a column of a table's key, numbers strictly increasing and
	// never reused: bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY;
	// INTEGER PRIMARY KEY AUTOINCREMENT (the rowid).
	Serial string
	// WithoutRowid ends a CREATE TABLE, after its ")": "" on PostgreSQL,
	// whose tables are heaps; " WITHOUT ROWID" on SQLite, whose table is
	// then stored in its primary key's order (its key is one index, not a
	// rowid table and an index).
	WithoutRowid string
	// SeqTiebreak ends an index's column list on a table keyed by a Serial
	// seq, where the index's order must be the rows' seq order among equal
	// values: ", seq" on PostgreSQL; "" on SQLite, where seq is the rowid,
	// which ends every index entry already.
	SeqTiebreak string
	// ByteOrder follows TEXT where a column must compare in byte order:
	// ` COLLATE "C"` on PostgreSQL, whatever the database's collation; ""
	// on SQLite, whose TEXT compares so already.
	ByteOrder string
}
