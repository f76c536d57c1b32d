package sqlstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relaybell/relaybell/store"
)

// SiteSettings reads one of the website's settings documents; nil when
// it was never set.
func (s *Store) SiteSettings(ctx context.Context, websiteID, name string) ([]byte, error) {
	var body string
	err := s.db.Read().QueryRow(ctx, `SELECT body FROM site_settings WHERE website_id = $1 AND name = $2`,
		websiteID, name).Scan(&body)
	switch err = s.mapErr(err); {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("loading %s settings: %w", name, err)
	}
	return []byte(body), nil
}

// PutSiteSettings stores one of the website's settings documents, and
// moves the definitions version with it.
func (s *Store) PutSiteSettings(ctx context.Context, websiteID, name string, body []byte, at time.Time) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if _, err := tx.Exec(ctx, `INSERT INTO site_settings (website_id, name, body, updated_at)
			VALUES ($1, $2, $3, $4) ON CONFLICT (website_id, name) DO UPDATE SET body = excluded.body,
			updated_at = excluded.updated_at`, websiteID, name, string(body), s.time(at)); err != nil {
			return err
		}
		return bumpDefinitions(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("storing %s settings: %w", name, s.mapErr(err))
	}
	return nil
}

const onsiteCols = `id, website_id, name, status, definition, created_at, updated_at`

func onsiteDest(m *store.OnsiteMessage) []any {
	return []any{&m.ID, &m.WebsiteID, &m.Name, &m.Status, rawJSONDest{&m.Definition},
		timeDest{&m.CreatedAt}, timeDest{&m.UpdatedAt}}
}

// ListOnsiteMessages lists the website's messages, newest first, with
// their counts.
func (s *Store) ListOnsiteMessages(ctx context.Context, websiteID string) ([]store.OnsiteMessage, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+onsiteCols+` FROM onsite_messages WHERE website_id = $1
		ORDER BY created_at DESC, id DESC`, websiteID)
	list, err := CollectRows(rows, err, onsiteDest)
	if err != nil {
		return nil, fmt.Errorf("listing on-site messages: %w", err)
	}
	if len(list) == 0 {
		return list, nil
	}
	counts, err := s.OnsiteCounts(ctx, websiteID, "")
	if err != nil {
		return nil, err
	}
	for i := range list {
		list[i].Counts = countsOf(counts[list[i].ID])
	}
	return list, nil
}

// countsOf is a message's counts, every kind present.
func countsOf(c map[string]int64) map[string]int64 {
	out := map[string]int64{store.OnsiteImpression: 0, store.OnsiteClick: 0, store.OnsiteDismiss: 0}
	for k, n := range c {
		out[k] = n
	}
	return out
}

// OnsiteMessage finds one of the website's messages, with its counts.
func (s *Store) OnsiteMessage(ctx context.Context, websiteID, id string) (store.OnsiteMessage, error) {
	var m store.OnsiteMessage
	err := s.db.Read().QueryRow(ctx, `SELECT `+onsiteCols+` FROM onsite_messages WHERE website_id = $1 AND id = $2`,
		websiteID, id).Scan(onsiteDest(&m)...)
	if err != nil {
		return store.OnsiteMessage{}, fmt.Errorf("loading on-site message: %w", s.mapErr(err))
	}
	counts, err := s.OnsiteCounts(ctx, websiteID, id)
	if err != nil {
		return store.OnsiteMessage{}, err
	}
	m.Counts = countsOf(counts[id])
	return m, nil
}

// CreateOnsiteMessage stores a new message; the definitions version
// moves with it, as with every change to the messages.
func (s *Store) CreateOnsiteMessage(ctx context.Context, m store.OnsiteMessage) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if _, err := tx.Exec(ctx, `INSERT INTO onsite_messages (`+onsiteCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, m.ID, m.WebsiteID, m.Name, m.Status, string(m.Definition),
			s.time(m.CreatedAt), s.time(m.UpdatedAt)); err != nil {
			return err
		}
		return bumpDefinitions(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("creating on-site message: %w", s.mapErr(err))
	}
	return nil
}

// UpdateOnsiteMessage replaces a message's name, status, definition and
// UpdatedAt.
func (s *Store) UpdateOnsiteMessage(ctx context.Context, m store.OnsiteMessage) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if err := affected(tx.Exec(ctx, `UPDATE onsite_messages SET name = $3, status = $4, definition = $5,
			updated_at = $6 WHERE website_id = $1 AND id = $2`, m.WebsiteID, m.ID, m.Name, m.Status,
			string(m.Definition), s.time(m.UpdatedAt))); err != nil {
			return err
		}
		return bumpDefinitions(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("updating on-site message: %w", s.mapErr(err))
	}
	return nil
}

// DeleteOnsiteMessage removes one of the website's messages with its
// counts, in one transaction.
func (s *Store) DeleteOnsiteMessage(ctx context.Context, websiteID, id string) error {
	return s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if err := affected(tx.Exec(ctx, `DELETE FROM onsite_messages WHERE website_id = $1 AND id = $2`, websiteID, id)); err != nil {
			return fmt.Errorf("deleting on-site message: %w", s.mapErr(err))
		}
		if _, err := tx.Exec(ctx, `DELETE FROM onsite_counts WHERE website_id = $1 AND subject = $2`, websiteID, id); err != nil {
			return err
		}
		return bumpDefinitions(ctx, tx)
	})
}

// CountOnsite adds n to a count.
func (s *Store) CountOnsite(ctx context.Context, websiteID, subject, kind string, n int64) error {
	_, err := s.db.Write().Exec(ctx, `INSERT INTO onsite_counts (website_id, subject, kind, n) VALUES ($1, $2, $3, $4)
		ON CONFLICT (website_id, subject, kind) DO UPDATE SET n = onsite_counts.n + excluded.n`,
		websiteID, subject, kind, n)
	if err != nil {
		return fmt.Errorf("counting %s of %s: %w", kind, subject, s.mapErr(err))
	}
	return nil
}

// OnsiteCounts reads the website's counts of subjects beginning with
// prefix.
func (s *Store) OnsiteCounts(ctx context.Context, websiteID, prefix string) (map[string]map[string]int64, error) {
	type row struct {
		subject, kind string
		n             int64
	}
	rows, err := s.db.Read().Query(ctx, `SELECT subject, kind, n FROM onsite_counts
		WHERE website_id = $1 AND substr(subject, 1, $2) = $3 ORDER BY subject, kind`,
		websiteID, len(prefix), prefix)
	list, err := CollectRows(rows, err, func(r *row) []any { return []any{&r.subject, &r.kind, &r.n} })
	if err != nil {
		return nil, fmt.Errorf("reading on-site counts: %w", err)
	}
	out := map[string]map[string]int64{}
	for _, r := range list {
		if !strings.HasPrefix(r.subject, prefix) {
			continue
		}
		if out[r.subject] == nil {
			out[r.subject] = map[string]int64{}
		}
		out[r.subject][r.kind] = r.n
	}
	return out, nil
}

// endpointHash is the welcome ledger's key of an endpoint URL.
func endpointHash(url string) string {
	sum := sha256.Sum256([]byte(url))
	return hex.EncodeToString(sum[:])
}

// queueWelcome stores the welcome timer of a new endpoint, in the
// registration's transaction, unless the ledger holds its URL already.
func (s *Store) queueWelcome(ctx context.Context, tx Conn, websiteID, endpointID, subscriberID, url string, due time.Time) error {
	return s.queueWelcomes(ctx, tx, []welcomeTimer{{websiteID, endpointID, subscriberID, url, due}})
}

// welcomeTimer is a new browser's welcome to queue.
type welcomeTimer struct {
	website, endpoint, subscriber, url string
	due                                time.Time
}

// queueWelcomes is queueWelcome for each, a statement for up to
// rowsPerInsert of them.
func (s *Store) queueWelcomes(ctx context.Context, tx Conn, welcomes []welcomeTimer) error {
	for chunk := range slices.Chunk(welcomes, rowsPerInsert) {
		args := make([]any, 0, 5*len(chunk)+1)
		for _, w := range chunk {
			args = append(args, w.endpoint, w.website, w.subscriber, s.time(w.due), endpointHash(w.url))
		}
		kind := "$" + strconv.Itoa(len(args)+1)
		args = append(args, store.TimerWelcome)
		if _, err := tx.Exec(ctx, `INSERT INTO timers (run_id, item, kind, website_id, subscriber_id, due_at)
			SELECT v.column1, 0, CAST(`+kind+` AS TEXT), v.column2, v.column3, v.column4
			FROM (VALUES `+valuesList(len(chunk), 5, map[int]string{3: s.d.DDL.Time})+`) AS v
			WHERE NOT EXISTS (SELECT 1 FROM welcome_ledger l
				WHERE l.website_id = v.column2 AND l.endpoint_hash = v.column5)
			ON CONFLICT DO NOTHING`, args...); err != nil {
			return err
		}
	}
	return nil
}

// WelcomeSent reports whether the ledger holds the endpoint URL.
func (s *Store) WelcomeSent(ctx context.Context, websiteID, url string) (bool, error) {
	var n int
	err := s.db.Read().QueryRow(ctx, `SELECT count(*) FROM welcome_ledger WHERE website_id = $1 AND endpoint_hash = $2`,
		websiteID, endpointHash(url)).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("reading welcome ledger: %w", err)
	}
	return n > 0, nil
}

// FireWelcome does a claimed welcome timer once. The DELETE of the timer
// is the claim that counts, as FireTimer's; the ledger's key (website,
// endpoint hash) makes a second timer of the same endpoint URL (it
// re-subscribed before the first fired) send nothing.
func (s *Store) FireWelcome(ctx context.Context, t store.Timer, w store.Welcome) (bool, error) {
	sent := false
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		sent = false
		res, err := tx.Exec(ctx, `DELETE FROM timers WHERE run_id = $1 AND item = $2 AND kind = $3`,
			t.RunID, t.Item, store.TimerWelcome)
		if err != nil {
			return err
		}
		if res == 0 {
			return nil
		}
		var url, subscriberID string
		err = tx.QueryRow(ctx, `SELECT url, subscriber_id FROM endpoints WHERE id = $1 AND website_id = $2`,
			t.RunID, t.WebsiteID).Scan(&url, &subscriberID)
		if errors.Is(s.mapErr(err), store.ErrNotFound) {
			return nil // unsubscribed before its welcome: nothing sent, nothing recorded
		} else if err != nil {
			return err
		}
		var notificationID any
		if w.Notification != nil {
			notificationID = w.Notification.ID
		}
		res, err = tx.Exec(ctx, `INSERT INTO welcome_ledger (website_id, endpoint_hash, notification_id, at)
			VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, t.WebsiteID, endpointHash(url), notificationID, s.time(w.At))
		if err != nil {
			return err
		}
		if res == 0 {
			return nil
		}
		if w.Notification == nil {
			return nil
		}
		if err := s.insertNotification(ctx, tx, w.Notification); err != nil {
			return err
		}
		sent = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("firing welcome timer %s: %w", t.RunID, s.mapErr(err))
	}
	return sent, nil
}
