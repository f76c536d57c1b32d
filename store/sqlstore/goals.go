package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/relaybell/relaybell/store"
)

// creditSources name what a credited notification n was sent for, the
// first whose column is set: an automation, a journey, else the
// notification itself.
var creditSources = []struct{ source, col string }{
	{store.SourceAutomation, "n.automation_id"},
	{store.SourceJourney, "n.journey_id"},
	{store.SourceNotification, "n.id"},
}

// creditSource and creditSourceID are the columns of a reach's source and
// source id, read from the credited notification n (NULL without one).
var creditSource, creditSourceID = func() (string, string) {
	var when, cols []string
	for _, c := range creditSources {
		when = append(when, "WHEN "+c.col+" IS NOT NULL THEN '"+c.source+"'")
		cols = append(cols, c.col)
	}
	return "CASE " + strings.Join(when, " ") + " END", "coalesce(" + strings.Join(cols, ", ") + ")"
}()

const goalCols = `id, website_id, name, coalesce(event, ''), coalesce(tag_name, ''), coalesce(tag_value, ''),
	window_hours, created_at, updated_at`

func goalDest(g *store.Goal) []any {
	return []any{&g.ID, &g.WebsiteID, &g.Name, &g.Event, &g.TagName, &g.TagValue, &g.WindowHours,
		timeDest{&g.CreatedAt}, timeDest{&g.UpdatedAt}}
}

// ListGoals lists the website's goals, newest first, with their results
// (one query for all of them).
func (s *Store) ListGoals(ctx context.Context, websiteID string) ([]store.Goal, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+goalCols+` FROM goals WHERE website_id = $1
		ORDER BY created_at DESC, id DESC`, websiteID)
	list, err := CollectRows(rows, err, goalDest)
	if err != nil {
		return nil, fmt.Errorf("listing goals: %w", err)
	}
	if err := s.goalResults(ctx, websiteID, "", list); err != nil {
		return nil, err
	}
	return list, nil
}

// Goal finds one of the website's goals, with its results.
func (s *Store) Goal(ctx context.Context, websiteID, id string) (store.Goal, error) {
	var g store.Goal
	err := s.db.Read().QueryRow(ctx, `SELECT `+goalCols+` FROM goals WHERE website_id = $1 AND id = $2`,
		websiteID, id).Scan(goalDest(&g)...)
	if err != nil {
		return store.Goal{}, fmt.Errorf("loading goal: %w", s.mapErr(err))
	}
	list := []store.Goal{g}
	if err := s.goalResults(ctx, websiteID, id, list); err != nil {
		return store.Goal{}, err
	}
	return list[0], nil
}

// goalResults fills the goals' results: their credited reaches summed by
// source, of the one goal id, or of all the website's when id is "".
func (s *Store) goalResults(ctx context.Context, websiteID, id string, goals []store.Goal) error {
	type row struct {
		goal string
		res  store.GoalResult
	}
	query := `SELECT r.goal_id, r.source, r.source_id, count(*), sum(r.value)
		FROM goal_reaches r JOIN goals g ON g.id = r.goal_id
		WHERE g.website_id = $1 AND r.notification_id IS NOT NULL`
	args := []any{websiteID}
	if id != "" {
		query += ` AND r.goal_id = $2`
		args = append(args, id)
	}
	rows, err := s.db.Read().Query(ctx, query+` GROUP BY r.goal_id, r.source, r.source_id
		ORDER BY r.goal_id, count(*) DESC, r.source, r.source_id`, args...)
	res, err := CollectRows(rows, err, func(r *row) []any {
		return []any{&r.goal, &r.res.Source, &r.res.ID, &r.res.Conversions, &r.res.Revenue}
	})
	if err != nil {
		return fmt.Errorf("reading goal results: %w", err)
	}
	byGoal := map[string][]store.GoalResult{}
	for _, r := range res {
		byGoal[r.goal] = append(byGoal[r.goal], r.res)
	}
	for i := range goals {
		goals[i].Results = byGoal[goals[i].ID]
		if goals[i].Results == nil {
			goals[i].Results = []store.GoalResult{}
		}
	}
	return nil
}

// CreateGoal stores a new goal and, for a tag goal, who has its label now.
func (s *Store) CreateGoal(ctx context.Context, g store.Goal) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if _, err := tx.Exec(ctx, `INSERT INTO goals (id, website_id, name, event, tag_name, tag_value, window_hours,
			created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			g.ID, g.WebsiteID, g.Name, nullString(g.Event), nullString(g.TagName), tagValue(g), g.WindowHours,
			s.now(g.CreatedAt), s.now(g.UpdatedAt)); err != nil {
			return err
		}
		return s.seedTagMembers(ctx, tx, g)
	})
	if err != nil {
		return fmt.Errorf("creating goal: %w", s.mapErr(err))
	}
	return nil
}

// UpdateGoal replaces a goal's settings and records again who has its
// label now.
func (s *Store) UpdateGoal(ctx context.Context, g store.Goal) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if err := affected(tx.Exec(ctx, `UPDATE goals SET name = $3, event = $4, tag_name = $5, tag_value = $6,
			window_hours = $7, updated_at = $8 WHERE website_id = $1 AND id = $2`,
			g.WebsiteID, g.ID, g.Name, nullString(g.Event), nullString(g.TagName), tagValue(g), g.WindowHours,
			s.now(g.UpdatedAt))); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM goal_tag_members WHERE goal_id = $1`, g.ID); err != nil {
			return err
		}
		return s.seedTagMembers(ctx, tx, g)
	})
	if err != nil {
		return fmt.Errorf("updating goal: %w", s.mapErr(err))
	}
	return nil
}

// tagValue is a tag goal's value column; NULL for an event goal.
func tagValue(g store.Goal) any {
	if g.TagName == "" {
		return nil
	}
	return g.TagValue
}

// seedTagMembers records the people who have a tag goal's label value.
func (s *Store) seedTagMembers(ctx context.Context, tx Conn, g store.Goal) error {
	if g.TagName == "" {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO goal_tag_members (goal_id, subscriber_id)
		SELECT $1, subscriber_id FROM subscriber_labels WHERE website_id = $2 AND key = $3 AND value = $4
		ON CONFLICT DO NOTHING`, g.ID, g.WebsiteID, g.TagName, g.TagValue)
	return err
}

// DeleteGoal removes a goal; its reaches and members go with it (ON
// DELETE CASCADE).
func (s *Store) DeleteGoal(ctx context.Context, websiteID, id string) error {
	if err := affected(s.db.Write().Exec(ctx, `DELETE FROM goals WHERE website_id = $1 AND id = $2`, websiteID, id)); err != nil {
		return fmt.Errorf("deleting goal: %w", s.mapErr(err))
	}
	return nil
}

// EventGoals lists the website's goals of an event name, oldest first.
func (s *Store) EventGoals(ctx context.Context, websiteID, event string) ([]store.Goal, error) {
	return s.matchGoals(ctx, `website_id = $1 AND event = $2`, websiteID, event)
}

// TagGoals lists the website's tag goals, oldest first.
func (s *Store) TagGoals(ctx context.Context, websiteID string) ([]store.Goal, error) {
	return s.matchGoals(ctx, `website_id = $1 AND tag_name IS NOT NULL`, websiteID)
}

func (s *Store) matchGoals(ctx context.Context, where string, args ...any) ([]store.Goal, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+goalCols+` FROM goals WHERE `+where+` ORDER BY created_at, id`, args...)
	list, err := CollectRows(rows, err, goalDest)
	if err != nil {
		return nil, fmt.Errorf("listing goals: %w", err)
	}
	return list, nil
}

// ReachGoal records a reach once per (goal, key).
func (s *Store) ReachGoal(ctx context.Context, r store.GoalReach) (bool, error) {
	n, err := s.reachGoal(ctx, s.db.Write(), r)
	if err != nil {
		return false, fmt.Errorf("recording goal reach: %w", s.mapErr(err))
	}
	return n == 1, nil
}

// reachGoal inserts the reach with the source of its notification, read
// in the same statement (a notification of another website credits
// nothing).
func (s *Store) reachGoal(ctx context.Context, c Conn, r store.GoalReach) (int64, error) {
	return c.Exec(ctx, `INSERT INTO goal_reaches (goal_id, reach_key, subscriber_id, notification_id, source, source_id, value, at)
		SELECT g.id, $2, p.id, n.id, `+creditSource+`, `+creditSourceID+`, $5, $6
		FROM goals g JOIN subscribers p ON p.website_id = g.website_id AND p.id = $3
		LEFT JOIN notifications n ON n.id = $4 AND n.website_id = g.website_id
		WHERE g.id = $1
		ON CONFLICT (goal_id, reach_key) DO NOTHING`,
		r.GoalID, r.Key, r.SubscriberID, r.NotificationID, r.Value, s.now(r.At))
}

// ReachTagGoal records a person's tag goal membership and, on entering,
// the reach.
func (s *Store) ReachTagGoal(ctx context.Context, r store.GoalReach, has bool) (bool, error) {
	var reached bool
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		reached = false
		if !has {
			_, err := tx.Exec(ctx, `DELETE FROM goal_tag_members WHERE goal_id = $1 AND subscriber_id = $2`,
				r.GoalID, r.SubscriberID)
			return err
		}
		n, err := tx.Exec(ctx, `INSERT INTO goal_tag_members (goal_id, subscriber_id)
			SELECT g.id, p.id FROM goals g JOIN subscribers p ON p.website_id = g.website_id
			WHERE g.id = $1 AND p.id = $2
			ON CONFLICT (goal_id, subscriber_id) DO NOTHING`, r.GoalID, r.SubscriberID)
		if err != nil || n == 0 {
			return err
		}
		if n, err = s.reachGoal(ctx, tx, r); err != nil {
			return err
		}
		reached = n == 1
		if !reached {
			return errors.New("a tag change's reach key was recorded before")
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("recording tag goal reach: %w", s.mapErr(err))
	}
	return reached, nil
}
