package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store/sqlite/wal"
	"github.com/relaybell/relaybell/store/sqlstore"
)

// TestWritesWakeTheCheckpointer: every write of the writer connection
// wakes the checkpointer (package wal) once it is done: a transaction,
// and a statement alone through Write, its rows closed or its row
// scanned. A read does not.
func TestWritesWakeTheCheckpointer(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	const bump = `UPDATE people_version SET version = version + 1`
	// settled waits until no checkpoint is due (the writes of Open and of
	// the case before have had theirs) and returns the count.
	settled := func() int64 {
		n := s.ckpt.Checkpoints()
		for {
			time.Sleep(3 * wal.Every)
			m := s.ckpt.Checkpoints()
			if m == n {
				return n
			}
			n = m
		}
	}
	woken := func(t *testing.T, before int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for s.ckpt.Checkpoints() == before {
			if time.Now().After(deadline) {
				t.Fatal("no checkpoint within 10 s of the write")
			}
			time.Sleep(time.Millisecond)
		}
	}
	writes := []struct {
		name  string
		write func() error
	}{
		{"transaction", func() error {
			return s.DB().Tx(ctx, sqlstore.TxOptions{}, func(tx sqlstore.Conn) error {
				_, err := tx.Exec(ctx, bump)
				return err
			})
		}},
		{"exec", func() error {
			_, err := s.DB().Write().Exec(ctx, bump)
			return err
		}},
		{"query", func() error {
			rows, err := s.DB().Write().Query(ctx, bump+` RETURNING version`)
			if err != nil {
				return err
			}
			for rows.Next() {
			}
			rows.Close()
			return rows.Err()
		}},
		{"query row", func() error {
			var v int64
			return s.DB().Write().QueryRow(ctx, bump+` RETURNING version`).Scan(&v)
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			before := settled()
			if err := w.write(); err != nil {
				t.Fatal(err)
			}
			woken(t, before)
		})
	}
	t.Run("read", func(t *testing.T) {
		before := settled()
		var v int64
		if err := s.DB().Read().QueryRow(ctx, `SELECT version FROM people_version`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * wal.Every)
		if n := s.ckpt.Checkpoints(); n != before {
			t.Fatalf("%d checkpoints after a read", n-before)
		}
	})
}
