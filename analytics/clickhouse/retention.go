package clickhouse

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// DropBefore deletes every event of the UTC days before day's UTC date by
// dropping their daily partitions whole; day's own date and later stay.
// It returns the partitions it dropped (YYYYMMDD).
func (s *Store) DropBefore(ctx context.Context, day time.Time) ([]uint32, error) {
	limit := dayKey(day)
	rows, err := s.conn.Query(ctx, `SELECT DISTINCT partition FROM system.parts
		WHERE database = ? AND table = ? AND active ORDER BY partition`, s.database, "events")
	if err != nil {
		return nil, fmt.Errorf("listing partitions: %w", err)
	}
	var old []uint32
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return nil, fmt.Errorf("listing partitions: %w", err)
		}
		// The partition expression is toYYYYMMDD(at): a UInt32 like 20261122.
		k, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("listing partitions: unexpected partition %q", p)
		}
		if uint32(k) < limit {
			old = append(old, uint32(k))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing partitions: %w", err)
	}
	for i, k := range old {
		// k is a number parsed above, so formatting it into the statement is safe.
		if err := s.conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s DROP PARTITION %d", s.table, k)); err != nil {
			return old[:i], fmt.Errorf("dropping partition %d: %w", k, err)
		}
		s.logger.Info("analytics partition dropped", "partition", k)
	}
	return old, nil
}

// dayKey is toYYYYMMDD of t's UTC date.
func dayKey(t time.Time) uint32 {
	y, m, d := t.UTC().Date()
	return uint32(y*10000 + int(m)*100 + d)
}
