package client

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"iter"
	"net/url"
)

// SendRequest is the body of POST /notifications (spec 2.1), of
// PATCH /notifications/{id}, POST /notifications/{id}/send and
// POST /test-devices/send. It is written by hand, not generated: members
// not listed here go in Extra, merged into the JSON body.
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

// Ptr returns a pointer to v, for the generated types' optional members.
func Ptr[T any](v T) *T { return &v }

// Track calls POST /events (PostEvent) with idempotencyKey as its
// Idempotency-Key: with a non-empty key the call is retried on 429 and
// 5xx, and the server stores the event once.
func (c *Client) Track(ctx context.Context, ev EventRequest, idempotencyKey string) (*EventAccepted, error) {
	return c.PostEvent(ctx, ev, &PostEventParams{IdempotencyKey: idempotencyKey})
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
