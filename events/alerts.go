package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// DefaultAlertTexts are the texts of a website's product alerts until it
// sets its own (settings alertTexts).
var DefaultAlertTexts = store.AlertTexts{
	BackInStock: store.AlertText{Title: "Back in stock: {product.title}", Body: "It is available again. Get it before it is gone."},
	PriceDrop:   store.AlertText{Title: "Price drop: {product.title}", Body: "Now {product.price}, was {product.oldPrice}."},
}

// AlertTexts are the website's product alert texts as they are used: its
// own, and the defaults where it has none.
func AlertTexts(s store.Settings) store.AlertTexts {
	t := DefaultAlertTexts
	if s.AlertTexts == nil {
		return t
	}
	for _, f := range []struct{ own, into *store.AlertText }{
		{&s.AlertTexts.BackInStock, &t.BackInStock}, {&s.AlertTexts.PriceDrop, &t.PriceDrop},
	} {
		if f.own.Title != "" {
			f.into.Title = f.own.Title
		}
		if f.own.Body != "" {
			f.into.Body = f.own.Body
		}
	}
	return t
}

// Bounds of a product alert's text (the website's own texts have the same
// bounds) and links; a longer link is left out.
const (
	MaxAlertTitle = 200
	MaxAlertBody  = 500
	maxAlertLink  = 2048
)

// cutText is s cut to n characters.
func cutText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// dispatchTimeout bounds publishing an alert's intent on the request's
// path; a slower bus leaves it to the outbox sweep.
const dispatchTimeout = 5 * time.Second

// alert makes the product alert an event asks for and fills its members
// of the answer.
func (s *Service) alert(ctx context.Context, w store.Website, name, product string, props properties, at time.Time, ans *Answer) error {
	kind := store.InterestPriceDrop
	if name == NameBackInStock {
		kind = store.InterestBackInStock
	}
	req := alertRequest(w, kind, product, props)
	n, err := notification.Prepare(ctx, req, w, nil, at)
	if tooLarge(err) {
		// The event's links (up to 2,048 bytes each) leave the texts no
		// room in one push: the alert goes without them.
		req.URL, req.Image = nil, nil
		n, err = notification.Prepare(ctx, req, w, nil, at)
	}
	if tooLarge(err) {
		// The website's own link and icon leave no room: no alert can go.
		s.logger.Warn("product alert too large for a push; none sent", "website_id", w.ID, "product_id", product, "err", err)
		zero, no := 0, false
		ans.ProductAlerts, ans.AlertAudience, ans.AlertAudienceTruncated = &zero, &zero, &no
		return nil
	}
	if err != nil {
		return fmt.Errorf("preparing product alert: %w", err)
	}
	n.Automation, n.SendBody = true, nil
	target := notification.Target{ProductAlert: &notification.ProductAlert{ID: n.ID, Kind: kind, ProductID: product}}
	n.TargetSummary = target.Summary()
	if n.Target, err = json.Marshal(target); err != nil {
		return fmt.Errorf("encoding product alert target: %w", err)
	}
	a := store.ProductAlert{ProductID: product, Kind: kind, Since: at.Add(-InterestLife), Max: s.cfg.AlertMax}
	if kind == store.InterestPriceDrop {
		a.DedupeSince = at.Add(-DedupeWindow)
	}
	res, err := s.st.CreateProductAlert(ctx, n, a)
	if err != nil {
		return err
	}
	sends := 0
	if res.Created {
		sends = 1
	}
	ans.ProductAlerts, ans.AlertAudience = &sends, &res.Audience
	ans.AlertAudienceTruncated, ans.Deduped = &res.Truncated, &res.Deduped
	if res.Created && n.Status == store.StatusQueued && s.disp != nil {
		dctx, cancel := context.WithTimeout(ctx, dispatchTimeout)
		defer cancel()
		if err := s.disp.Dispatch(dctx, *n); err != nil {
			s.logger.Warn("dispatching a product alert; the outbox sweep will retry", "notification_id", n.ID, "err", err)
		}
	}
	return nil
}

// tooLarge reports whether err is a send refused for not fitting one push.
func tooLarge(err error) bool {
	var ne *notification.Error
	return errors.As(err, &ne) && ne.Code == "payload_too_large"
}

// alertRequest is the send of a product alert: the website's text for
// the kind (or the default) filled from the event's properties, with its
// url and image when they are http(s) links.
func alertRequest(w store.Website, kind, product string, p properties) *notification.Request {
	text, ownBody := AlertTexts(w.Settings).PriceDrop, w.Settings.AlertTexts != nil && w.Settings.AlertTexts.PriceDrop.Body != ""
	if kind == store.InterestBackInStock {
		text, ownBody = AlertTexts(w.Settings).BackInStock, w.Settings.AlertTexts != nil && w.Settings.AlertTexts.BackInStock.Body != ""
	}
	title := p.text("title")
	if title == "" {
		title = product
	}
	price, oldPrice := p.price("price", w), p.price("oldPrice", w)
	fill := strings.NewReplacer("{product.title}", title, "{product.price}", price, "{product.oldPrice}", oldPrice).Replace
	t, body := text.Title, text.Body
	switch {
	case ownBody:
	case kind == store.InterestPriceDrop && price == "":
		body = "The price just went down."
	case kind == store.InterestPriceDrop && oldPrice == "":
		body = "Now {product.price}."
	}
	t, body = cutText(strings.TrimSpace(fill(t)), MaxAlertTitle), cutText(strings.TrimSpace(fill(body)), MaxAlertBody)
	if t == "" {
		t = cutText(title, MaxAlertTitle)
	}
	r := &notification.Request{Title: &t}
	if body != "" {
		r.Body = &body
	}
	for _, f := range []struct {
		key string
		to  **string
	}{{"url", &r.URL}, {"image", &r.Image}} {
		if v := p.text(f.key); len(v) <= maxAlertLink && notification.IsHTTPURL(v) {
			*f.to = &v
		}
	}
	return r
}

// price is a price member as shown: a number followed by the website's
// currency when it has one, a string as written.
func (p properties) price(key string, w store.Website) string {
	v := p.text(key)
	if _, ok := p.number(key); ok && w.Settings.Currency != "" {
		return v + " " + w.Settings.Currency
	}
	return v
}
