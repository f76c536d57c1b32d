package webhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// Event names of spec 6.2.
const (
	// EventSubscriberCreated: a new browser subscribed.
	EventSubscriberCreated = store.EventSubscriberCreated
	// EventSubscriberUnsubscribed: a visitor turned notifications off
	// through the site.
	EventSubscriberUnsubscribed = store.EventSubscriberUnsubscribed
	// EventNotificationSent: a send finished going out.
	EventNotificationSent = store.EventNotificationSent
	// EventNotificationClicked: someone clicked a notification.
	EventNotificationClicked = store.EventNotificationClicked
	// EventFeedPaused: the service paused a feed that kept failing, or
	// whose topic was deleted.
	EventFeedPaused = store.EventFeedPaused
	// EventSchedulePaused: the service paused a recurring schedule whose
	// topic was deleted, or one whose occurrence could not be sent.
	EventSchedulePaused = store.EventSchedulePaused
	// EventTest is sent only on request (POST /webhooks/{id}/test), to one
	// webhook, whatever it subscribes to; no webhook receives it otherwise.
	EventTest = store.EventWebhookTest
)

// Subscribable lists, in the spec's order, the events a webhook can
// subscribe to: every kind of spec 6.2 but EventTest. Callers must not
// modify it.
var Subscribable = []string{EventSubscriberCreated, EventSubscriberUnsubscribed,
	EventNotificationSent, EventNotificationClicked, EventFeedPaused, EventSchedulePaused}

// Kinds lists every event kind of spec 6.2, EventTest included. Callers
// must not modify it.
var Kinds = append(slices.Clip(Subscribable), EventTest)

// IsKind reports whether name is an event kind of spec 6.2.
func IsKind(name string) bool { return slices.Contains(Kinds, name) }

// body is the JSON of every event delivery (spec 6.1), members in the
// spec's order.
type body struct {
	Event     string          `json:"event"`
	Data      json.RawMessage `json:"data"`
	ProjectID string          `json:"projectId"`
	At        string          `json:"at"`
}

// Body returns the body of an event delivery (spec 6.1):
// {"event","data","projectId","at"}, with at, when the event happened, in
// notification.TimeLayout, the API's date-time form. data must be a JSON
// object; it is kept as given, except that insignificant white space is
// removed. HTML characters are not escaped.
// The result is the exact text every attempt signs and sends.
func Body(event, projectID string, data json.RawMessage, at time.Time) ([]byte, error) {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return nil, errors.New("building webhook body: data must be a JSON object")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(body{Event: event, Data: data, ProjectID: projectID, At: at.UTC().Format(notification.TimeLayout)})
	if err != nil {
		return nil, fmt.Errorf("building webhook body: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
