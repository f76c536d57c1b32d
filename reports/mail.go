package reports

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

// Outbox queues e-mail (store.Webhooks' outbox, sent by SMTP when the
// server has a relay).
type Outbox interface {
	AddEmail(ctx context.Context, m store.Email) error
}

// Queue puts one copy of rep's message in the outbox for each of to, and
// returns their ids.
func Queue(ctx context.Context, o Outbox, rep Report, to []string, now time.Time) ([]string, error) {
	body, ctype, err := rep.Message()
	if err != nil {
		return nil, fmt.Errorf("rendering the report: %w", err)
	}
	var ids []string
	for _, addr := range to {
		id := uuid.NewString()
		if err := o.AddEmail(ctx, store.Email{ID: id, To: addr, Subject: rep.Subject(), Body: body, ContentType: ctype, CreatedAt: now}); err != nil {
			return ids, fmt.Errorf("queueing the report: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}
