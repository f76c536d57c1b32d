// Package wal checkpoints a SQLite file's write-ahead log on a connection
// of its own, so that the file's writer does not stop to copy it.
//
// In WAL mode a commit appends pages to the log, and a checkpoint copies
// them back into the database file. SQLite's own checkpoint runs inside
// the commit that takes the log past wal_autocheckpoint pages (1,000 by
// default): that commit, and every write queued behind the one writer
// connection, waits for a thousand pages to be copied. Under a steady
// load of events that was most of their p99 (docs/scale-out.md, "The
// embedded default's checkpoints (stop 49)"). A checkpoint on another
// connection (PASSIVE: it takes no lock a writer or a reader waits for)
// runs beside the writes instead, on another core where there is one.
// Only to have the log start again does the writer checkpoint too, once
// it is RestartAt pages long, copying the little the Checkpointer has not
// (checkpoint).
//
// The file's writer keeps an autocheckpoint, at Backstop pages, so that a
// log the Checkpointer cannot keep up with (a reader holding an old
// snapshot) still stops growing.
package wal

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Every is how long after a write the stores have their log checkpointed,
// at most once in that time: short checkpoints, often, kept the events'
// p99 lowest (docs/scale-out.md, "The embedded default's checkpoints
// (stop 49)": every 20 ms against every 100 and 500).
const Every = 20 * time.Millisecond

// RestartAt is the length of the log, in pages (16 MB of 4 KB pages), at
// which the Checkpointer has the next write start it again (checkpoint).
const RestartAt = 4_000

// Backstop is the wal_autocheckpoint the file's writer connection keeps:
// ten times SQLite's default, reached only when the Checkpointer has
// fallen behind.
const Backstop = 10_000

// Checkpointer checkpoints one file's log while it is written: Wrote,
// called after each write, wakes it, and it checkpoints once, its every
// after the first write since its last checkpoint. An idle file costs
// nothing.
type Checkpointer struct {
	db, writer *sql.DB
	logger     *slog.Logger
	after      *After
	// checkpoints counts the checkpoints made, complete or not;
	// restarts those followed by one on the writer.
	checkpoints, restarts atomic.Int64
}

// Start checkpoints through db, a connection of its own to the file (the
// Checkpointer closes it), every after a write at most once; writer is
// the pool of the file's one writer connection, which checkpoints in
// turn with the writes once the log is RestartAt pages long (checkpoint).
func Start(db, writer *sql.DB, every time.Duration, logger *slog.Logger) *Checkpointer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	c := &Checkpointer{db: db, writer: writer, logger: logger}
	c.after = StartAfter(every, c.checkpoint)
	return c
}

// Wrote tells the Checkpointer the file was written. It never waits.
func (c *Checkpointer) Wrote() { c.after.Wake() }

// Checkpoints is the number of checkpoints made so far.
func (c *Checkpointer) Checkpoints() int64 { return c.checkpoints.Load() }

// Restarts is the number of checkpoints made on the writer so far.
func (c *Checkpointer) Restarts() int64 { return c.restarts.Load() }

// checkpoint copies what it can of the log into the file. A page a
// reader's snapshot still needs stays in the log until a later one.
//
// The log starts again from its beginning only when a write begins with
// every page of it copied, and under a steady load a write always
// appends more before the next begins: the log would grow to Backstop,
// and the writer's own checkpoint there stall the writes. So once the log
// holds RestartAt pages, the writer connection itself checkpoints, in
// turn with the writes: nothing is appended meanwhile, it copies only
// what was written since this one (a few milliseconds' worth), and the
// next write starts the log again. A RESTART checkpoint
// would do it too, but it waits for the readers while holding the writes
// back: at 3,200 events a second the p99 rose past 20 ms.
func (c *Checkpointer) checkpoint() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var busy, logged, copied int
	if err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logged, &copied); err != nil {
		c.logger.Warn("sqlite checkpoint", "err", err)
		return
	}
	c.checkpoints.Add(1)
	if logged < RestartAt {
		return
	}
	if _, err := c.writer.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		c.logger.Warn("sqlite checkpoint on the writer", "err", err)
		return
	}
	c.restarts.Add(1)
}

// Close stops the Checkpointer, waiting for a checkpoint in progress, and
// closes its connection. It may be called more than once.
func (c *Checkpointer) Close() error {
	c.after.Close()
	return c.db.Close()
}

// After does a file's upkeep (a checkpoint, an index built in bulk) a
// while after it is written: every after a Wake, work runs once, however
// many Wakes came meanwhile; an idle file costs nothing.
type After struct {
	every   time.Duration
	work    func()
	wake    chan struct{}
	stop    chan struct{}
	stopped sync.Once
	done    chan struct{}
}

// StartAfter runs work every after each Wake, at most once in that time,
// until Close.
func StartAfter(every time.Duration, work func()) *After {
	a := &After{every: every, work: work, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go a.run()
	return a
}

// Wake has work run every from now, unless a run is due already. It
// never waits.
func (a *After) Wake() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *After) run() {
	defer close(a.done)
	for {
		select {
		case <-a.wake:
		case <-a.stop:
			return
		}
		t := time.NewTimer(a.every)
		select {
		case <-t.C:
		case <-a.stop:
			t.Stop()
			return
		}
		a.work()
	}
}

// Close stops the runs, waiting for one in progress. It may be called
// more than once.
func (a *After) Close() {
	a.stopped.Do(func() { close(a.stop) })
	<-a.done
}
