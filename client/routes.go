package client

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
)

// SendRequest is the body of POST /notifications (spec 2.1). Fields not
// listed here go in Extra, merged into the JSON body.
//
// The targeting fields are sent whenever they are set, even empty: the
// server refuses an empty externalId or externalIds (external_ids_empty)
// instead of sending to everyone, so a user id that came out empty never
// widens a send. A request with none of them goes to every subscriber.
type SendRequest struct {
	Title string `json:"title"`
	Body  string `json:"body,omitempty"`
	URL   string `json:"url,omitempty"`
	Icon  string `json:"icon,omitempty"`
	Image string `json:"image,omitempty"`
	// ExternalID targets one of your users (String makes one).
	ExternalID *string `json:"externalId,omitempty"`
	// ExternalIDs targets these users when not nil (an empty list is
	// refused).
	ExternalIDs []string       `json:"-"`
	SegmentID   *string        `json:"segmentId,omitempty"`
	TopicID     *string        `json:"topicId,omitempty"`
	SendAt      string         `json:"sendAt,omitempty"`
	Draft       bool           `json:"draft,omitempty"`
	Extra       map[string]any `json:"-"`
}

// String returns a pointer to s, for SendRequest's targeting fields.
func String(s string) *string { return &s }

// MarshalJSON adds externalIds when set and merges Extra into the body.
func (r SendRequest) MarshalJSON() ([]byte, error) {
	type plain SendRequest
	data, err := json.Marshal(plain(r))
	if err != nil || (len(r.Extra) == 0 && r.ExternalIDs == nil) {
		return data, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	for k, v := range r.Extra {
		m[k] = v
	}
	if r.ExternalIDs != nil {
		m["externalIds"] = r.ExternalIDs
	}
	return json.Marshal(m)
}

// SendAccepted is the answer of POST /notifications.
type SendAccepted struct {
	OK             bool   `json:"ok"`
	NotificationID string `json:"notificationId"`
	Status         string `json:"status"`
	Message        string `json:"message,omitempty"`
}

// Notification is one item of GET /notifications (spec 2.3).
type Notification struct {
	ID            string  `json:"id"`
	Title         string  `json:"title"`
	Body          *string `json:"body"`
	Status        string  `json:"status"`
	CreatedAt     string  `json:"created_at"`
	ScheduledAt   *string `json:"scheduled_at"`
	Recipients    int64   `json:"recipients"`
	Sent          int64   `json:"sent"`
	Delivered     int64   `json:"delivered"`
	Failed        int64   `json:"failed"`
	Pruned        int64   `json:"pruned"`
	Clicked       int64   `json:"clicked"`
	CTR           float64 `json:"ctr"`
	Conversions   int64   `json:"conversions"`
	Revenue       float64 `json:"revenue"`
	TargetSummary string  `json:"targetSummary"`
	Error         *string `json:"error"`
}

// NotificationList is a page of GET /notifications.
type NotificationList struct {
	Items      []Notification `json:"items"`
	NextCursor *string        `json:"nextCursor"`
}

// NotificationDetail is GET /notifications/{id}; members beyond the
// notification are kept raw.
type NotificationDetail struct {
	Notification Notification               `json:"notification"`
	Funnel       map[string]int64           `json:"funnel"`
	Rest         map[string]json.RawMessage `json:"-"`
}

// Send calls POST /notifications.
func (c *Client) Send(ctx context.Context, req SendRequest) (*SendAccepted, error) {
	var out SendAccepted
	return &out, c.Post(ctx, "/notifications", req, &out)
}

// ListNotifications calls GET /notifications for one page; query takes
// the spec's filters, limit and cursor.
func (c *Client) ListNotifications(ctx context.Context, query url.Values) (*NotificationList, error) {
	var out NotificationList
	return &out, c.Get(ctx, "/notifications", query, &out)
}

// Notifications iterates over every notification matching query, page by
// page.
func (c *Client) Notifications(ctx context.Context, query url.Values) iter.Seq2[Notification, error] {
	return Pages[Notification](ctx, c, "/notifications", query, "items")
}

// GetNotification calls GET /notifications/{id}.
func (c *Client) GetNotification(ctx context.Context, id string) (*NotificationDetail, error) {
	var out NotificationDetail
	return &out, c.Get(ctx, "/notifications/"+url.PathEscape(id), nil, &out)
}

// CancelNotification calls POST /notifications/{id}/cancel.
func (c *Client) CancelNotification(ctx context.Context, id string) error {
	return c.Post(ctx, "/notifications/"+url.PathEscape(id)+"/cancel", nil, nil)
}

// Event is the body of POST /events (spec 4.2).
type Event struct {
	Event        string         `json:"event"`
	ExternalID   string         `json:"externalId,omitempty"`
	SubscriberID string         `json:"subscriberId,omitempty"`
	Endpoint     string         `json:"endpoint,omitempty"`
	Properties   map[string]any `json:"properties,omitempty"`
}

// EventAccepted is the answer of POST /events.
type EventAccepted struct {
	OK           bool    `json:"ok"`
	EventID      string  `json:"eventId"`
	SubscriberID *string `json:"subscriberId"`
	IsConversion bool    `json:"isConversion"`
	Attribution  *struct {
		NotificationID string  `json:"notificationId"`
		Value          float64 `json:"value"`
	} `json:"attribution"`
	AutomationsTriggered int `json:"automationsTriggered"`
	SequencesEnrolled    int `json:"sequencesEnrolled"`
}

// Track calls POST /events. With a non-empty idempotencyKey the call is
// retried on 429 and 5xx, and the server stores the event once.
func (c *Client) Track(ctx context.Context, ev Event, idempotencyKey string) (*EventAccepted, error) {
	var out EventAccepted
	return &out, c.Do(ctx, Request{Method: http.MethodPost, Path: "/events", Body: ev, IdempotencyKey: idempotencyKey}, &out)
}

// ListEvents calls GET /events (the latest 100, newest first).
func (c *Client) ListEvents(ctx context.Context) ([]map[string]any, error) {
	var out struct {
		Events []map[string]any `json:"events"`
	}
	return out.Events, c.Get(ctx, "/events", nil, &out)
}

// Segment is a segment of GET /segments.
type Segment struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Filters json.RawMessage `json:"filters,omitempty"`
}

// ListSegments calls GET /segments.
func (c *Client) ListSegments(ctx context.Context) ([]Segment, error) {
	var out struct {
		Segments []Segment `json:"segments"`
	}
	return out.Segments, c.Get(ctx, "/segments", nil, &out)
}

// Topic is a topic of GET /topics.
type Topic struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Slug        string `json:"slug"`
	CreatedAt   string `json:"created_at"`
	Subscribers int64  `json:"subscribers"`
}

// ListTopics calls GET /topics.
func (c *Client) ListTopics(ctx context.Context) ([]Topic, error) {
	var out struct {
		Topics []Topic `json:"topics"`
	}
	return out.Topics, c.Get(ctx, "/topics", nil, &out)
}

// DeleteSubscriber calls DELETE /subscribers/{externalId} (erasure).
func (c *Client) DeleteSubscriber(ctx context.Context, externalID string) error {
	return c.Delete(ctx, "/subscribers/"+url.PathEscape(externalID), nil)
}

// SubscriberProfile calls GET /subscribers/{externalId}/profile.
func (c *Client) SubscriberProfile(ctx context.Context, externalID string) (map[string]any, error) {
	var out map[string]any
	return out, c.Get(ctx, "/subscribers/"+url.PathEscape(externalID)+"/profile", nil, &out)
}

// Stats calls GET /stats with query (range, tz, ...).
func (c *Client) Stats(ctx context.Context, query url.Values) (map[string]any, error) {
	var out map[string]any
	return out, c.Get(ctx, "/stats", query, &out)
}

// Pages iterates over a cursor-paged list: it calls GET path with query,
// yields each element of the member itemsKey ("items" for
// /notifications, "deliveries" for a webhook's deliveries, ...), and
// follows nextCursor until it is null. An error ends the iteration after
// being yielded once.
func Pages[T any](ctx context.Context, c *Client, path string, query url.Values, itemsKey string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		q := url.Values{}
		for k, v := range query {
			q[k] = append([]string(nil), v...)
		}
		for {
			var page map[string]json.RawMessage
			if err := c.Get(ctx, path, q, &page); err != nil {
				var zero T
				yield(zero, err)
				return
			}
			var items []T
			if raw, ok := page[itemsKey]; ok {
				if err := json.Unmarshal(raw, &items); err != nil {
					var zero T
					yield(zero, err)
					return
				}
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			var next *string
			if raw, ok := page["nextCursor"]; ok {
				_ = json.Unmarshal(raw, &next)
			}
			if next == nil || *next == "" {
				return
			}
			q.Set("cursor", *next)
		}
	}
}

// IdentityHash is the externalIdHash the browser SDK sends with an
// externalId when the website verifies identities: the hex HMAC-SHA256 of
// externalID keyed with the whole identity secret (GET /identity), prefix
// included. Compute it on your server; never ship the secret to browsers.
func IdentityHash(secret, externalID string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(externalID))
	return hex.EncodeToString(m.Sum(nil))
}

// Webhook is a webhook of GET /webhooks; Secret is only in the answer of
// CreateWebhook.
type Webhook struct {
	ID        string   `json:"id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	Secret    string   `json:"secret,omitempty"`
	Enabled   bool     `json:"enabled"`
	CreatedAt string   `json:"created_at"`
}

// WebhookDelivery is one attempt of a webhook's delivery log; members
// beyond these are in the served OpenAPI document.
type WebhookDelivery struct {
	ID             string  `json:"id"`
	Event          string  `json:"event"`
	Status         string  `json:"status"`
	Attempts       int     `json:"attempts"`
	LastStatusCode *int    `json:"last_status_code"`
	Error          *string `json:"error"`
	CreatedAt      string  `json:"created_at"`
	DeliveredAt    *string `json:"delivered_at"`
}

// CreateWebhook calls POST /webhooks; the answer holds the secret, shown
// this once.
func (c *Client) CreateWebhook(ctx context.Context, target string, events []string) (*Webhook, error) {
	var out struct {
		Webhook Webhook `json:"webhook"`
	}
	body := map[string]any{"url": target}
	if events != nil {
		body["events"] = events
	}
	return &out.Webhook, c.Post(ctx, "/webhooks", body, &out)
}

// ListWebhooks calls GET /webhooks.
func (c *Client) ListWebhooks(ctx context.Context) ([]Webhook, error) {
	var out struct {
		Webhooks []Webhook `json:"webhooks"`
	}
	return out.Webhooks, c.Get(ctx, "/webhooks", nil, &out)
}

// TestWebhook calls POST /webhooks/{id}/test: one webhook.test delivery.
func (c *Client) TestWebhook(ctx context.Context, id string) (*WebhookDelivery, error) {
	var out struct {
		Delivery WebhookDelivery `json:"delivery"`
	}
	return &out.Delivery, c.Post(ctx, "/webhooks/"+url.PathEscape(id)+"/test", nil, &out)
}

// WebhookDeliveries iterates over a webhook's delivery log, newest first.
func (c *Client) WebhookDeliveries(ctx context.Context, id string) iter.Seq2[WebhookDelivery, error] {
	return Pages[WebhookDelivery](ctx, c, "/webhooks/"+url.PathEscape(id)+"/deliveries", nil, "deliveries")
}
