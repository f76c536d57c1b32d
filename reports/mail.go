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

// Mails are one copy of rep's message for each of to.
func Mails(rep Report, to []string, now time.Time) ([]store.Email, error) {
	body, ctype, err := rep.Message()
	if err != nil {
		return nil, fmt.Errorf("rendering the report: %w", err)
	}
	mails := make([]store.Email, 0, len(to))
	for _, addr := range to {
		mails = append(mails, store.Email{ID: uuid.NewString(), To: addr, Subject: rep.Subject(), Body: body, ContentType: ctype, CreatedAt: now})
	}
	return mails, nil
}

// Queue puts Mails(rep, to, now) in the outbox and returns their ids.
func Queue(ctx context.Context, o Outbox, rep Report, to []string, now time.Time) ([]string, error) {
	mails, err := Mails(rep, to, now)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, m := range mails {
		if err := o.AddEmail(ctx, m); err != nil {
			return ids, fmt.Errorf("queueing the report: %w", err)
		}
		ids = append(ids, m.ID)
	}
	return ids, nil
}
