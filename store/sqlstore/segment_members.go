package sqlstore

import (
	"context"
	"fmt"
	"slices"
)

// watcherOf selects, for the people of the FROM list named p, the watcher
// $1 when it is an automation or a journey of the person's website: the
// automation_id and journey_id of its membership row (exactly one set),
// and no row at all for anyone else.
const watcherOf = `SELECT coalesce(a.id, j.id), p.id, a.id, j.id FROM subscribers p
	LEFT JOIN automations a ON a.id = $1 AND a.website_id = p.website_id
	LEFT JOIN journeys j ON j.id = $1 AND j.website_id = p.website_id
	WHERE (a.id IS NOT NULL OR j.id IS NOT NULL) AND `

// SetSegmentMember records a person in or out of a watcher's segment.
func (s *Store) SetSegmentMember(ctx context.Context, watcherID, subscriberID string, in bool) (bool, error) {
	var n int64
	var err error
	if in {
		n, err = s.db.Write().Exec(ctx, `INSERT INTO segment_members (watcher_id, subscriber_id, automation_id, journey_id)
			`+watcherOf+`p.id = $2 ON CONFLICT (watcher_id, subscriber_id) DO NOTHING`, watcherID, subscriberID)
	} else {
		_, err = s.db.Write().Exec(ctx, `DELETE FROM segment_members WHERE watcher_id = $1 AND subscriber_id = $2`,
			watcherID, subscriberID)
	}
	if err != nil {
		return false, fmt.Errorf("recording segment member: %w", s.mapErr(err))
	}
	return n == 1, nil
}

// SeedSegmentMembers replaces a watcher's recorded segment members.
func (s *Store) SeedSegmentMembers(ctx context.Context, watcherID string, subscriberIDs []string) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if _, err := tx.Exec(ctx, `DELETE FROM segment_members WHERE watcher_id = $1`, watcherID); err != nil {
			return err
		}
		for chunk := range slices.Chunk(subscriberIDs, 1000) {
			if _, err := tx.Exec(ctx, `INSERT INTO segment_members (watcher_id, subscriber_id, automation_id, journey_id)
				`+watcherOf+s.d.In("p.id", "$2")+` ON CONFLICT DO NOTHING`, watcherID, s.d.List(chunk)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("seeding segment members: %w", s.mapErr(err))
	}
	return nil
}
