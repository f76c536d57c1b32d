package integrations

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/events"
	"github.com/relaybell/relaybell/store"
)

// Platforms.
const (
	Shopify     = "shopify"
	WooCommerce = "woocommerce"
)

// Platforms are the platforms in the order GET /integrations lists them.
var Platforms = []string{Shopify, WooCommerce}

// Limits.
const (
	// RotationGrace is how long the previous secret stays valid.
	RotationGrace = 24 * time.Hour
	// MaxBody bounds a delivery's body; a larger one answers 413.
	MaxBody = 1 << 20
	// MaxDeliveryID bounds a delivery id.
	MaxDeliveryID = 200
	// SecretPrefix starts every commerce secret.
	SecretPrefix = "rbcs_"
)

// External id choices (settings commerceExternalId).
const (
	ByCustomerID = "customerId"
	ByEmail      = "email"
)

// Errors of Receive.
var (
	// ErrSignature: unsigned or wrongly signed; nothing was done.
	ErrSignature = errors.New("the request is not signed with the website's commerce signing secret")
	// ErrDeliveryID: the delivery id header is missing or too long.
	ErrDeliveryID = errors.New("the delivery id header is missing or too long")
	// ErrBody: a verified delivery whose body is not one JSON object in
	// valid UTF-8, as every topic of both platforms is; nothing is done
	// and nothing recorded.
	ErrBody = errors.New("the body is not a JSON object")
)

// Headers of a platform: its signature, delivery id and topic.
type Headers struct{ Signature, DeliveryID, Topic string }

// HeaderNames are the header names of each platform.
var HeaderNames = map[string]Headers{
	Shopify:     {"X-Shopify-Hmac-Sha256", "X-Shopify-Webhook-Id", "X-Shopify-Topic"},
	WooCommerce: {"X-WC-Webhook-Signature", "X-WC-Webhook-Delivery-ID", "X-WC-Webhook-Topic"},
}

// NewSecret returns a new commerce signing secret.
func NewSecret() string { return SecretPrefix + rand.Text() }

// Rotate gives s a new secret, keeping the current one valid for
// RotationGrace from now.
func Rotate(s *store.Settings, now time.Time) {
	if s.CommerceSecret != "" {
		s.PreviousCommerceSecret = s.CommerceSecret
		at := now.UTC()
		s.CommerceSecretRotatedAt = &at
	}
	s.CommerceSecret = NewSecret()
}

// PreviousValidUntil is when the previous secret stops being valid; nil
// when there is none.
func PreviousValidUntil(s store.Settings) *time.Time {
	if s.PreviousCommerceSecret == "" || s.CommerceSecretRotatedAt == nil {
		return nil
	}
	t := s.CommerceSecretRotatedAt.Add(RotationGrace).UTC()
	return &t
}

// Sign is the signature both platforms send: the base64 HMAC-SHA256 of
// body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Verify reports whether sig signs body under the website's current
// secret, or its previous one within the grace period. The comparison is
// in constant time.
func Verify(s store.Settings, body []byte, sig string, now time.Time) bool {
	got, err := base64.StdEncoding.DecodeString(strings.TrimSpace(sig))
	if err != nil || len(got) != sha256.Size {
		return false
	}
	ok := false
	for _, secret := range secrets(s, now) {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		if hmac.Equal(m.Sum(nil), got) {
			ok = true
		}
	}
	return ok
}

func secrets(s store.Settings, now time.Time) []string {
	var out []string
	if s.CommerceSecret != "" {
		out = append(out, s.CommerceSecret)
	}
	if until := PreviousValidUntil(s); until != nil && now.Before(*until) {
		out = append(out, s.PreviousCommerceSecret)
	}
	return out
}

// Event is a RelayBell event a delivery maps to.
type Event struct {
	Name       string
	ExternalID string // "" names nobody (product alerts)
	Properties map[string]any
	// Key is what the event is about, for its id: the same Key of the
	// same website and platform is the same event.
	Key string
	// Stock, when set, is the stock state the delivery tells of an item
	// whose payload does not say what it was (WooCommerce): Receive
	// records it and tracks the event only when the store reports the
	// item back in stock.
	Stock *Stock `json:",omitempty"`
}

// Stock is an item's stock state as a delivery tells it.
type Stock struct {
	Item    string // the product's or variation's id
	InStock bool
	// At is when the item was in that state (the product's last change);
	// zero when the payload does not tell, the delivery's receive time
	// then.
	At time.Time `json:",omitzero"`
}

// Tracker is what Receive sends the events to (events.Service is one).
type Tracker interface {
	Track(ctx context.Context, in events.Input) (events.Answer, error)
}

// Store is the ledger.
type Store interface {
	store.Integrations
}

// Service receives the platforms' deliveries.
type Service struct {
	st Store
	ev Tracker
}

// New returns a Service.
func New(st Store, ev Tracker) *Service { return &Service{st: st, ev: ev} }

// Delivery is one request of a platform.
type Delivery struct {
	Website  store.Website
	Platform string
	Headers  Headers // the values of HeaderNames[Platform]
	Body     []byte
	At       time.Time
}

// Result is what a delivery did.
type Result struct {
	Replayed bool                      `json:"replayed"`
	Events   []ResultEvent             `json:"events"`
	Ignored  string                    `json:"ignored,omitempty"`
	Ledger   store.IntegrationDelivery `json:"-"`
}

// ResultEvent is one event a delivery tracked, as POST /events answered
// it.
type ResultEvent struct {
	Name         string              `json:"name"`
	EventID      string              `json:"eventId"`
	SubscriberID *string             `json:"subscriberId"`
	IsConversion bool                `json:"isConversion"`
	Attribution  *events.Attribution `json:"attribution"`
}

// eventSpace is the UUID namespace of the events' ids.
var eventSpace = uuid.MustParse("6f1c2a52-3c1e-4f8e-9b7a-2f1e8d3c5b41")

// Receive verifies the delivery, dedupes it and tracks its events. A
// verified delivery is recorded in the ledger once its events are stored
// (a failure before answers an error, and the platform's retry does it
// again under the same event ids).
func (s *Service) Receive(ctx context.Context, d Delivery) (Result, error) {
	if !Verify(d.Website.Settings, d.Body, d.Headers.Signature, d.At) {
		return Result{}, ErrSignature
	}
	id := strings.TrimSpace(d.Headers.DeliveryID)
	if id == "" || len(id) > MaxDeliveryID {
		return Result{}, ErrDeliveryID
	}
	var obj map[string]json.RawMessage
	if !utf8.Valid(d.Body) || json.Unmarshal(d.Body, &obj) != nil || obj == nil {
		return Result{}, ErrBody
	}
	done, err := s.st.IntegrationDelivered(ctx, d.Website.ID, d.Platform, id)
	if err != nil {
		return Result{}, err
	}
	if done {
		return Result{Replayed: true, Events: []ResultEvent{}}, nil
	}
	rec := store.IntegrationDelivery{WebsiteID: d.Website.ID, Platform: d.Platform, DeliveryID: id,
		Topic: cut(d.Headers.Topic, 100), ReceivedAt: d.At.UTC()}
	res := Result{Events: []ResultEvent{}}
	evs, err := Parse(d.Platform, d.Headers.Topic, d.Body, d.Website.Settings.CommerceExternalID, id)
	switch {
	case errors.Is(err, ErrTopic):
		// Not a failure: the platform sends topics no event comes of,
		// recorded as tracking nothing, as a delivery with nothing to
		// track.
		res.Ignored = "topic"
	case err != nil:
		res.Ignored = "payload"
		rec.Error = cut(err.Error(), 500)
	}
	var names, ids []string
	for _, e := range evs {
		if e.Stock != nil {
			at := e.Stock.At
			if at.IsZero() {
				at = d.At
			}
			back, err := s.st.ObserveCommerceStock(ctx, d.Website.ID, d.Platform, e.Stock.Item, e.Stock.InStock, id, at)
			if err != nil {
				return Result{}, fmt.Errorf("recording the stock of %s: %w", e.Stock.Item, err)
			}
			if !back {
				continue
			}
		}
		props, err := json.Marshal(e.Properties)
		if err != nil {
			return Result{}, err
		}
		in := events.Input{ID: uuid.NewSHA1(eventSpace, []byte(d.Website.ID+"\x00"+d.Platform+"\x00"+e.Key)).String(),
			Website: d.Website, Name: e.Name, ExternalID: e.ExternalID, Addressed: e.ExternalID != "",
			Properties: props, Source: events.SourceServer, At: d.At}
		ans, err := s.ev.Track(ctx, in)
		if errors.Is(err, events.ErrValue) || errors.Is(err, events.ErrTooLarge) || errors.Is(err, events.ErrProperties) {
			// A payload no retry makes better: recorded as its error.
			res.Ignored = "payload"
			rec.Error = cut(e.Name+": "+err.Error(), 500)
			continue
		}
		if err != nil {
			err = fmt.Errorf("tracking %s: %w", e.Name, err)
			if e.Stock != nil {
				// The return to stock is recorded but its event is not:
				// taken back, so that the retry of this delivery, or the
				// next one in stock if WooCommerce does not retry, reports
				// it (tracking before recording would tell a return twice
				// when two deliveries race). Even when ctx is done.
				if uerr := s.st.UndoCommerceRestock(context.WithoutCancel(ctx), d.Website.ID, d.Platform, e.Stock.Item, id); uerr != nil {
					err = errors.Join(err, uerr)
				}
			}
			return Result{}, err
		}
		res.Events = append(res.Events, ResultEvent{Name: e.Name, EventID: ans.EventID, SubscriberID: ans.SubscriberID,
			IsConversion: ans.IsConversion, Attribution: ans.Attribution})
		names, ids = append(names, e.Name), append(ids, ans.EventID)
	}
	if res.Ignored == "" && len(res.Events) == 0 {
		res.Ignored = "nothing to track"
	}
	rec.Event, rec.EventID = strings.Join(names, ","), strings.Join(ids, ",")
	if err := s.st.RecordIntegrationDelivery(ctx, rec); err != nil && !errors.Is(err, store.ErrConflict) {
		return Result{}, err
	}
	res.Ledger = rec
	return res, nil
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
