package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

// feedCols are a feed's columns with its ledger's counts.
const feedCols = `f.id, f.website_id, f.name, f.url, f.audience, f.template, f.status, coalesce(f.paused_reason, ''),
	f.poll_minutes, f.max_per_poll, f.send_existing, coalesce(f.topic_id, ''), coalesce(f.segment_id, ''),
	coalesce(f.exclude_segment_id, ''), coalesce(f.template_id, ''), coalesce(f.etag, ''), coalesce(f.last_modified, ''), f.seeded, f.next_poll_at,
	f.failing_since, f.last_poll_at, coalesce(f.last_poll_status, 0), coalesce(f.last_poll_new, 0),
	coalesce(f.last_poll_error, ''), f.budget_refused_at, f.created_at, f.updated_at,
	(SELECT count(*) FROM feed_items i WHERE i.feed_id = f.id AND i.status = 'pending'),
	(SELECT count(*) FROM feed_items i WHERE i.feed_id = f.id AND i.status = 'sent')`

// feedRow scans feedCols into a feed.
type feedRow struct {
	store.Feed
	lastAt *time.Time
	poll   store.FeedPoll
}

func feedDest(r *feedRow) []any {
	f := &r.Feed
	return []any{&f.ID, &f.WebsiteID, &f.Name, &f.URL, rawJSONDest{&f.Audience}, rawJSONDest{&f.Template}, &f.Status,
		&f.PausedReason, &f.PollMinutes, &f.MaxPerPoll, &f.SendExisting, &f.TopicID, &f.SegmentID, &f.ExcludeSegmentID,
		&f.TemplateID, &f.ETag, &f.LastModified, &f.Seeded, timeDest{&f.NextPollAt}, timePtrDest{&f.FailingSince}, timePtrDest{&r.lastAt},
		&r.poll.HTTPStatus, &r.poll.NewItems, &r.poll.Error, timePtrDest{&f.BudgetRefusedAt}, timeDest{&f.CreatedAt},
		timeDest{&f.UpdatedAt}, &f.Pending, &f.Sent}
}

func (r feedRow) feed() store.Feed {
	f := r.Feed
	if r.lastAt != nil {
		p := r.poll
		p.At = *r.lastAt
		f.LastPoll = &p
	}
	return f
}

func (s *Store) queryFeeds(ctx context.Context, c Conn, query string, args ...any) ([]store.Feed, error) {
	rows, err := c.Query(ctx, query, args...)
	list, err := CollectRows(rows, err, feedDest)
	if err != nil {
		return nil, err
	}
	out := make([]store.Feed, len(list))
	for i, r := range list {
		out[i] = r.feed()
	}
	return out, nil
}

// TemplateFeeds lists the feeds whose template is a saved template.
func (s *Store) TemplateFeeds(ctx context.Context, websiteID, templateID string) ([]store.FeedUse, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT id, name FROM feeds WHERE website_id = $1 AND template_id = $2
		ORDER BY created_at, id`, websiteID, templateID)
	out, err := CollectRows(rows, err, func(u *store.FeedUse) []any { return []any{&u.ID, &u.Name} })
	if err != nil {
		return nil, fmt.Errorf("listing a template's feeds: %w", err)
	}
	return out, nil
}

// ListFeeds lists the website's feeds, newest first.
func (s *Store) ListFeeds(ctx context.Context, websiteID string) ([]store.Feed, error) {
	out, err := s.queryFeeds(ctx, s.db.Read(), `SELECT `+feedCols+` FROM feeds f WHERE f.website_id = $1
		ORDER BY f.created_at DESC, f.id DESC`, websiteID)
	if err != nil {
		return nil, fmt.Errorf("listing feeds: %w", err)
	}
	return out, nil
}

// Feed finds one of the website's feeds.
func (s *Store) Feed(ctx context.Context, websiteID, id string) (store.Feed, error) {
	out, err := s.queryFeeds(ctx, s.db.Read(), `SELECT `+feedCols+` FROM feeds f WHERE f.website_id = $1 AND f.id = $2`,
		websiteID, id)
	if err != nil {
		return store.Feed{}, fmt.Errorf("loading feed: %w", err)
	}
	if len(out) == 0 {
		return store.Feed{}, fmt.Errorf("loading feed: %w", store.ErrNotFound)
	}
	return out[0], nil
}

// CreateFeed stores a new feed.
func (s *Store) CreateFeed(ctx context.Context, f store.Feed) error {
	_, err := s.db.Write().Exec(ctx, `INSERT INTO feeds (id, website_id, name, url, audience, template, status,
		paused_reason, poll_minutes, max_per_poll, send_existing, topic_id, segment_id, exclude_segment_id, next_poll_at,
		created_at, updated_at, template_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
		f.ID, f.WebsiteID, f.Name, f.URL, string(f.Audience), string(f.Template), f.Status, nullString(f.PausedReason),
		f.PollMinutes, f.MaxPerPoll, f.SendExisting, nullString(f.TopicID), nullString(f.SegmentID),
		nullString(f.ExcludeSegmentID), s.time(f.NextPollAt), s.now(f.CreatedAt), s.now(f.UpdatedAt), nullString(f.TemplateID))
	if err != nil {
		return fmt.Errorf("creating feed: %w", s.mapErr(err))
	}
	return nil
}

// UpdateFeed replaces a feed's settings (sendExisting included: a new URL
// is seeded again with it).
func (s *Store) UpdateFeed(ctx context.Context, f store.Feed) error {
	err := affected(s.db.Write().Exec(ctx, `UPDATE feeds SET name = $3, audience = $4, template = $5, status = $6,
		paused_reason = $7, poll_minutes = $8, max_per_poll = $9, topic_id = $10, segment_id = $11,
		exclude_segment_id = $12, next_poll_at = $13, updated_at = $14, template_id = $16, send_existing = $17,
		failing_since = CASE WHEN $6 = 'active' THEN NULL ELSE failing_since END,
		seeded = CASE WHEN url = $15 THEN seeded ELSE false END, etag = CASE WHEN url = $15 THEN etag END, last_modified = CASE WHEN url = $15 THEN last_modified END,
		url = $15
		WHERE website_id = $1 AND id = $2`,
		f.WebsiteID, f.ID, f.Name, string(f.Audience), string(f.Template), f.Status, nullString(f.PausedReason),
		f.PollMinutes, f.MaxPerPoll, nullString(f.TopicID), nullString(f.SegmentID), nullString(f.ExcludeSegmentID),
		s.time(f.NextPollAt), s.now(f.UpdatedAt), f.URL, nullString(f.TemplateID), f.SendExisting))
	if err != nil {
		return fmt.Errorf("updating feed: %w", s.mapErr(err))
	}
	return nil
}

// DeleteFeed removes a feed; its ledger goes with it (ON DELETE CASCADE).
func (s *Store) DeleteFeed(ctx context.Context, websiteID, id string) error {
	if err := affected(s.db.Write().Exec(ctx, `DELETE FROM feeds WHERE website_id = $1 AND id = $2`, websiteID, id)); err != nil {
		return fmt.Errorf("deleting feed: %w", s.mapErr(err))
	}
	return nil
}

// ClaimFeeds leases due active feeds, as ClaimTimers leases timers.
func (s *Store) ClaimFeeds(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Feed, error) {
	rows, err := s.db.Write().Query(ctx, `UPDATE feeds SET leased_until = $2
		FROM (SELECT id AS due_id FROM feeds
			WHERE status = 'active' AND next_poll_at <= $1 AND (leased_until IS NULL OR leased_until <= $1)
			ORDER BY next_poll_at, id LIMIT $3 `+s.d.SkipLocked()+`) due
		WHERE id = due.due_id AND (leased_until IS NULL OR leased_until <= $1)
		RETURNING id, website_id`, s.time(now), s.time(now.Add(lease)), limitArg(limit))
	type key struct{ id, website string }
	keys, err := CollectRows(rows, err, func(k *key) []any { return []any{&k.id, &k.website} })
	if err != nil {
		return nil, fmt.Errorf("claiming feeds: %w", err)
	}
	out := make([]store.Feed, 0, len(keys))
	for _, k := range keys {
		f, err := s.Feed(ctx, k.website, k.id)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since
		}
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// ClaimFeed leases one feed now, due or not, and makes it due now: when
// its claimer dies, the poller takes it again once the lease runs out.
func (s *Store) ClaimFeed(ctx context.Context, websiteID, id string, now time.Time, lease time.Duration) (store.Feed, error) {
	n, err := s.db.Write().Exec(ctx, `UPDATE feeds SET leased_until = $3,
		next_poll_at = CASE WHEN next_poll_at > $4 THEN $4 ELSE next_poll_at END
		WHERE website_id = $1 AND id = $2 AND (leased_until IS NULL OR leased_until <= $4)`,
		websiteID, id, s.time(now.Add(lease)), s.time(now))
	if err != nil {
		return store.Feed{}, fmt.Errorf("claiming feed: %w", err)
	}
	f, err := s.Feed(ctx, websiteID, id)
	if err != nil {
		return store.Feed{}, err
	}
	if n == 0 {
		return store.Feed{}, fmt.Errorf("claiming feed: %w", store.ErrConflict)
	}
	return f, nil
}

// RecordFeedItems records a fetch's items in the ledger.
func (s *Store) RecordFeedItems(ctx context.Context, websiteID, feedID string, f store.FeedFetch, sendExisting int) (int, error) {
	var added int
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		added = 0
		var seeded bool
		if err := tx.QueryRow(ctx, `SELECT seeded FROM feeds WHERE website_id = $1 AND id = $2 `+s.d.ForUpdate(),
			websiteID, feedID).Scan(&seeded); err != nil {
			return err
		}
		// The feed's last item is found first, so that the pending ones go
		// out oldest first.
		for i := len(f.Items) - 1; i >= 0; i-- {
			it := f.Items[i]
			status := store.FeedItemPending
			if !seeded && i >= sendExisting {
				status = store.FeedItemSeen
			}
			var req any
			if status == store.FeedItemPending {
				req = nullBytes(it.Data)
			}
			n, err := tx.Exec(ctx, `INSERT INTO feed_items (feed_id, item_key, status, ord, data, seen_at)
				VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (feed_id, item_key) DO NOTHING`,
				feedID, it.Key, status, len(f.Items)-1-i, req, s.time(f.At))
			if err != nil {
				return err
			}
			if n > 0 && status == store.FeedItemPending {
				added++
			}
		}
		_, err := tx.Exec(ctx, `UPDATE feeds SET seeded = true, etag = $3, last_modified = $4 WHERE website_id = $1 AND id = $2`,
			websiteID, feedID, nullString(f.ETag), nullString(f.LastModified))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("recording feed items: %w", s.mapErr(err))
	}
	return added, nil
}

// PendingFeedItems lists a feed's pending items, oldest first.
func (s *Store) PendingFeedItems(ctx context.Context, feedID string, limit int) ([]store.FeedItem, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT item_key, data, status FROM feed_items
		WHERE feed_id = $1 AND status = 'pending' ORDER BY seen_at, ord, item_key LIMIT $2`, feedID, limitArg(limit))
	out, err := CollectRows(rows, err, func(it *store.FeedItem) []any {
		return []any{&it.Key, rawJSONDest{&it.Data}, &it.Status}
	})
	if err != nil {
		return nil, fmt.Errorf("listing pending feed items: %w", err)
	}
	return out, nil
}

// SendFeedItem sends a pending item once: the UPDATE of its ledger row
// from pending to sent is the claim that counts (of two nodes sending it,
// the second waits on the first's row lock, then updates nothing), and
// the budget's unit and the notification commit with it.
func (s *Store) SendFeedItem(ctx context.Context, feedID, key string, n *store.Notification, budget *store.RateLimit, at time.Time) (bool, error) {
	var sent bool
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		sent = false
		c, err := tx.Exec(ctx, `UPDATE feed_items SET status = 'sent', notification_id = $3, sent_at = $4, data = NULL
			WHERE feed_id = $1 AND item_key = $2 AND status = 'pending'`, feedID, key, n.ID, s.time(at))
		if err != nil || c == 0 {
			return err
		}
		if budget != nil {
			if _, err := s.takeRateLimit(ctx, tx, *budget, 1, at); err != nil {
				return err
			}
		}
		n.FeedID = feedID
		if err := s.insertNotification(ctx, tx, n); err != nil {
			return err
		}
		sent = true
		return nil
	})
	switch {
	case errors.Is(err, errNoRoom):
		return false, store.ErrNoRoom
	case err != nil:
		return false, fmt.Errorf("sending feed item: %w", s.mapErr(err))
	}
	return sent, nil
}

// SkipFeedItem records a pending item seen.
func (s *Store) SkipFeedItem(ctx context.Context, feedID, key string) error {
	if _, err := s.db.Write().Exec(ctx, `UPDATE feed_items SET status = 'seen', data = NULL
		WHERE feed_id = $1 AND item_key = $2 AND status = 'pending'`, feedID, key); err != nil {
		return fmt.Errorf("skipping feed item: %w", err)
	}
	return nil
}

// FinishFeedPoll records a poll's outcome and ends the lease.
func (s *Store) FinishFeedPoll(ctx context.Context, websiteID, feedID string, p store.FeedPoll, next time.Time, budgetRefused *time.Time) error {
	failing := `NULL`
	if p.Error != "" && !p.Waiting {
		failing = `coalesce(failing_since, $4)`
	}
	err := affected(s.db.Write().Exec(ctx, `UPDATE feeds SET leased_until = NULL, next_poll_at = $3, last_poll_at = $4,
		last_poll_status = $5, last_poll_new = $6, last_poll_error = $7, failing_since = `+failing+`,
		budget_refused_at = coalesce($8, budget_refused_at)
		WHERE website_id = $1 AND id = $2`, websiteID, feedID, s.time(next), s.time(p.At), p.HTTPStatus, p.NewItems,
		nullString(p.Error), s.timePtr(budgetRefused)))
	if err != nil {
		return fmt.Errorf("finishing feed poll: %w", s.mapErr(err))
	}
	return nil
}

// PauseFeed pauses an active feed, queues the mails and adds the event.
func (s *Store) PauseFeed(ctx context.Context, websiteID, feedID, reason string, at time.Time, mails []store.Email, event string, data any) (bool, error) {
	var done bool
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		done = false
		n, err := tx.Exec(ctx, `UPDATE feeds SET status = 'paused', paused_reason = $3, updated_at = $4
			WHERE website_id = $1 AND id = $2 AND status = 'active'`, websiteID, feedID, nullString(reason), s.time(at))
		if err != nil || n == 0 {
			return err
		}
		for _, m := range mails {
			if m.CreatedAt.IsZero() {
				m.CreatedAt = at
			}
			if err := s.insertEmail(ctx, tx, m); err != nil {
				return err
			}
		}
		done = true
		if event == "" {
			return nil
		}
		return s.addEvent(ctx, tx, websiteID, event, data, at)
	})
	if err != nil {
		return false, fmt.Errorf("pausing feed: %w", s.mapErr(err))
	}
	return done, nil
}

// pauseTopicFeeds pauses, in tx, the active feeds that target a topic
// (named name) being deleted, and adds a feed.paused event for each.
func (s *Store) pauseTopicFeeds(ctx context.Context, tx Conn, websiteID, topicID, name string, at time.Time) error {
	rows, err := tx.Query(ctx, `SELECT id, name, url FROM feeds WHERE website_id = $1 AND topic_id = $2 AND status = 'active' ORDER BY id`,
		websiteID, topicID)
	list, err := CollectRows(rows, err, func(d *store.FeedPausedData) []any { return []any{&d.FeedID, &d.Name, &d.URL} })
	if err != nil || len(list) == 0 {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE feeds SET status = 'paused', paused_reason = $3, updated_at = $4
		WHERE website_id = $1 AND topic_id = $2 AND status = 'active'`, websiteID, topicID, store.FeedPausedTopicDeleted, s.time(at)); err != nil {
		return err
	}
	for _, d := range list {
		d.Reason, d.Error = store.FeedPausedTopicDeleted, fmt.Sprintf("its topic %q was deleted", name)
		if err := s.addEvent(ctx, tx, websiteID, store.EventFeedPaused, d, at); err != nil {
			return err
		}
	}
	return nil
}
