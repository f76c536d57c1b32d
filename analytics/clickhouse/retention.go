package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// DropBefore deletes every event and behavior of the UTC days before
// day's UTC date by dropping their daily partitions whole; day's own date
// and later stay. It returns the days it dropped (YYYYMMDD), each once
// whichever tables held it.
func (s *Store) DropBefore(ctx context.Context, day time.Time) ([]uint32, error) {
	limit := dayKey(day)
	var dropped []uint32
	done := func() []uint32 {
		slices.Sort(dropped)
		return slices.Compact(dropped)
	}
	for _, table := range []string{"events", "behaviors"} {
		old, err := s.partitionsBefore(ctx, table, limit)
		if err != nil {
			return done(), err
		}
		for _, k := range old {
			// k is a number parsed from system.parts, so formatting it
			// into the statement is safe.
			if err := s.conn.Exec(ctx, fmt.Sprintf("ALTER TABLE `%s`.%s DROP PARTITION %d", s.database, table, k)); err != nil {
				return done(), fmt.Errorf("dropping partition %d of %s: %w", k, table, err)
			}
			s.logger.Info("analytics partition dropped", "table", table, "partition", k)
			dropped = append(dropped, k)
		}
	}
	return done(), nil
}

// partitionsBefore lists the table's partitions of the days before limit.
func (s *Store) partitionsBefore(ctx context.Context, table string, limit uint32) ([]uint32, error) {
	rows, err := s.conn.Query(ctx, `SELECT DISTINCT partition FROM system.parts
		WHERE database = ? AND table = ? AND active ORDER BY partition`, s.database, table)
	if err != nil {
		return nil, fmt.Errorf("listing partitions of %s: %w", table, err)
	}
	defer rows.Close()
	var old []uint32
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("listing partitions of %s: %w", table, err)
		}
		// The partition expression is toYYYYMMDD(at): a UInt32 like 20261122.
		k, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("listing partitions of %s: unexpected partition %q", table, p)
		}
		if uint32(k) < limit {
			old = append(old, uint32(k))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing partitions of %s: %w", table, err)
	}
	return old, nil
}

// dayKey is toYYYYMMDD of t's UTC date.
func dayKey(t time.Time) uint32 {
	y, m, d := t.UTC().Date()
	return uint32(y*10000 + int(m)*100 + d)
}
