package webhooks

import (
	"context"
	"fmt"
	"net"
	"net/smtp"
	"strings"
	"time"

	"github.com/relaybell/relaybell/store"
)

// Mailer sends one message of the e-mail outbox.
type Mailer interface {
	Send(ctx context.Context, m store.Email) error
}

// SMTP sends mail through a relay (RELAYBELL_SMTP_*). The relay's
// STARTTLS is used when it offers it; the credentials, when set, go only
// over TLS or to a relay on loopback (net/smtp's PlainAuth rule).
type SMTP struct {
	Addr     string // host:port
	From     string
	Username string
	Password string
}

// Send delivers m through the relay.
func (s *SMTP) Send(ctx context.Context, m store.Email) error {
	host, _, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return fmt.Errorf("smtp address %q: %w", s.Addr, err)
	}
	var auth smtp.Auth
	if s.Username != "" {
		auth = smtp.PlainAuth("", s.Username, s.Password, host)
	}
	for _, v := range []string{s.From, m.To, m.Subject} {
		if strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("smtp: header value with a line break")
		}
	}
	// A body of another type (a report's multipart/related) is stored
	// with CRLF line ends already; plain text is kept with LF.
	ctype, body := "text/plain; charset=utf-8", strings.ReplaceAll(m.Body, "\n", "\r\n")
	if m.ContentType != "" {
		if strings.ContainsAny(m.ContentType, "\r\n") {
			return fmt.Errorf("smtp: header value with a line break")
		}
		ctype, body = m.ContentType, m.Body
	}
	msg := "From: " + s.From + "\r\nTo: " + m.To + "\r\nSubject: " + m.Subject +
		"\r\nDate: " + m.CreatedAt.UTC().Format(time.RFC1123Z) +
		"\r\nMessage-ID: <" + m.ID + "@relaybell>\r\nMIME-Version: 1.0\r\nContent-Type: " + ctype + "\r\n\r\n" + body
	done := make(chan error, 1)
	go func() { done <- smtp.SendMail(s.Addr, auth, s.From, []string{m.To}, []byte(msg)) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// mailLease is how long a node holds a message while it sends it.
const mailLease = 2 * time.Minute

// Mail sends the outbox's unsent messages when a Mailer is configured;
// otherwise they wait there for the operator. A message without an address
// is marked sent without sending.
func (e *Engine) Mail(ctx context.Context) error {
	if e.cfg.Mailer == nil {
		return nil
	}
	ms, err := e.store.ClaimEmails(ctx, e.now(), mailLease, 20)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.To != "" {
			sctx, cancel := context.WithTimeout(ctx, time.Minute)
			err := e.cfg.Mailer.Send(sctx, m)
			cancel()
			if err != nil {
				e.logger.Warn("webhooks: sending mail", "email", m.ID, "err", err)
				continue // the lease runs out and a later pass tries again
			}
		}
		if err := e.store.MarkEmailSent(ctx, m.ID, e.now()); err != nil {
			return err
		}
	}
	return nil
}
