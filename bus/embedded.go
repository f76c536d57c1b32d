package bus

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Embedded is a durable single-process bus: messages live in a SQLite file
// until a handler acknowledges them, so a crash redelivers whatever was
// unfinished at the next start.
type Embedded struct {
	db     *sql.DB
	logger *slog.Logger

	mu       sync.Mutex
	inflight map[int64]bool
	wake     map[string]chan struct{} // per topic, signalled on publish
	retry    time.Duration
}

var _ Bus = (*Embedded)(nil)

// OpenEmbedded opens (or creates) the bus file at path.
func OpenEmbedded(ctx context.Context, path string, logger *slog.Logger) (*Embedded, error) {
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening bus: %w", err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS messages (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		topic TEXT NOT NULL,
		key TEXT NOT NULL,
		value BLOB NOT NULL,
		available_at INTEGER NOT NULL,
		attempts INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX IF NOT EXISTS messages_topic ON messages (topic, available_at, id);`); err != nil {
		db.Close()
		return nil, fmt.Errorf("creating bus schema: %w", err)
	}
	return &Embedded{
		db:       db,
		logger:   logger,
		inflight: make(map[int64]bool),
		wake:     make(map[string]chan struct{}),
		retry:    time.Second,
	}, nil
}

// Publish stores the message durably before returning.
func (e *Embedded) Publish(ctx context.Context, topic, key string, value []byte) error {
	if _, err := e.db.ExecContext(ctx, `INSERT INTO messages (topic, key, value, available_at) VALUES (?, ?, ?, ?)`,
		topic, key, value, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("publishing to %s: %w", topic, err)
	}
	e.signal(topic)
	return nil
}

func (e *Embedded) wakeChan(topic string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch, ok := e.wake[topic]
	if !ok {
		ch = make(chan struct{}, 1)
		e.wake[topic] = ch
	}
	return ch
}

func (e *Embedded) signal(topic string) {
	select {
	case e.wakeChan(topic) <- struct{}{}:
	default:
	}
}

type claimed struct {
	id       int64
	msg      Message
	attempts int
}

// claim takes up to n available messages of the topic that no worker holds.
func (e *Embedded) claim(ctx context.Context, topic string, n int) ([]claimed, error) {
	e.mu.Lock()
	held := len(e.inflight)
	e.mu.Unlock()
	rows, err := e.db.QueryContext(ctx, `SELECT id, key, value, attempts FROM messages
		WHERE topic = ? AND available_at <= ? ORDER BY id LIMIT ?`, topic, time.Now().UnixMilli(), n+held)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []claimed
	e.mu.Lock()
	defer e.mu.Unlock()
	for rows.Next() && len(out) < n {
		var c claimed
		if err := rows.Scan(&c.id, &c.msg.Key, &c.msg.Value, &c.attempts); err != nil {
			return nil, err
		}
		if e.inflight[c.id] {
			continue
		}
		e.inflight[c.id] = true
		c.msg.Topic = topic
		out = append(out, c)
	}
	return out, rows.Err()
}

func (e *Embedded) release(id int64) {
	e.mu.Lock()
	delete(e.inflight, id)
	e.mu.Unlock()
}

// Consume runs h with up to parallel messages in flight. The group is
// irrelevant in one process: every message goes to one handler.
func (e *Embedded) Consume(ctx context.Context, topic, group string, parallel int, h Handler) error {
	if parallel < 1 {
		parallel = 1
	}
	slots := make(chan struct{}, parallel)
	wake := e.wakeChan(topic)
	var wg sync.WaitGroup
	defer wg.Wait()
	poll := time.NewTicker(500 * time.Millisecond)
	defer poll.Stop()
	for {
		free := parallel - len(slots)
		if free > 0 {
			batch, err := e.claim(ctx, topic, free)
			if err != nil && ctx.Err() == nil {
				e.logger.Error("bus: claiming messages", "topic", topic, "err", err)
			}
			for _, c := range batch {
				slots <- struct{}{}
				wg.Add(1)
				go func(c claimed) {
					defer wg.Done()
					defer func() { <-slots; e.signal(topic) }()
					e.handle(ctx, c, h)
				}(c)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-poll.C:
		}
	}
}

func (e *Embedded) handle(ctx context.Context, c claimed, h Handler) {
	defer e.release(c.id)
	err := h(ctx, c.msg)
	if ctx.Err() != nil {
		return // shutting down: the message stays for the next start
	}
	// Acknowledge or reschedule with a fresh context: the outcome must be
	// recorded even if the handler's context is about to end.
	done, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err == nil {
		if _, err := e.db.ExecContext(done, `DELETE FROM messages WHERE id = ?`, c.id); err != nil {
			e.logger.Error("bus: acknowledging", "topic", c.msg.Topic, "err", err)
		}
		return
	}
	delay := e.retry << min(c.attempts, 6)
	e.logger.Warn("bus: handler failed, will retry", "topic", c.msg.Topic, "key", c.msg.Key, "attempt", c.attempts+1, "retry_in", delay, "err", err)
	if _, err := e.db.ExecContext(done, `UPDATE messages SET attempts = attempts + 1, available_at = ? WHERE id = ?`,
		time.Now().Add(delay).UnixMilli(), c.id); err != nil && !errors.Is(err, context.Canceled) {
		e.logger.Error("bus: rescheduling", "topic", c.msg.Topic, "err", err)
	}
}

// Pending counts unacknowledged messages of a topic (tests and metrics).
func (e *Embedded) Pending(ctx context.Context, topic string) (int, error) {
	var n int
	err := e.db.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE topic = ?`, topic).Scan(&n)
	return n, err
}

// Close closes the bus file.
func (e *Embedded) Close() error { return e.db.Close() }
