package notification

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/relaybell/relaybell/store"
)

// Payload is the JSON the service worker receives (DESIGN.md).
type Payload struct {
	NotificationID     string   `json:"notificationId"`
	EndpointID         string   `json:"endpointId"`
	Title              string   `json:"title"`
	Body               string   `json:"body"`
	URL                string   `json:"url"`
	Icon               string   `json:"icon"`
	Image              string   `json:"image"`
	Badge              string   `json:"badge"`
	Actions            []Action `json:"actions"`
	RequireInteraction bool     `json:"requireInteraction"`
	Tag                string   `json:"tag"`
	Variant            *string  `json:"variant"`
}

// DecodeContent reads a stored Content.
func DecodeContent(raw []byte) (*Content, error) {
	var c Content
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("decoding content: %w", err)
	}
	return &c, nil
}

// DecodeTarget reads a stored Target; nil or null means everyone.
func DecodeTarget(raw []byte) (Target, error) {
	var t Target
	if len(raw) == 0 || string(raw) == "null" {
		return t, nil
	}
	// A member this version does not know narrows the audience in a way it
	// cannot apply (a newer node's product alert, say): refusing the
	// target fails the send instead of sending it to everyone.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return Target{}, fmt.Errorf("decoding target: %w", err)
	}
	return t, nil
}

// Variant returns "a" or "b" for an A/B send and "" otherwise. Each
// browser gets the version its endpoint id hashes to (stable, so a browser
// always gets the same one), except that once an auto-winner send decided
// its winner, the browsers outside its test group get the winner.
func (c *Content) Variant(notificationID, endpointID, winner string) string {
	if c.B == nil {
		return ""
	}
	if winner != "" && c.ABTest != nil && c.ABTest.AutoWinner &&
		!InTestGroup(notificationID, endpointID, c.ABTest.TestPercent) {
		return winner
	}
	h := fnv.New32a()
	h.Write([]byte(endpointID))
	if h.Sum32()%2 == 0 {
		return "a"
	}
	return "b"
}

// Payload builds what one browser receives: version B's fields for variant
// "b", the translation for the browser's language (store.Endpoint's
// Language) when there is one, and
// then the merge tags of title, body and url replaced with r's values (see
// mergeTags). A nil r gives no endpoint id and every tag its fallback.
func (c *Content) Payload(notificationID string, r *store.Recipient, variant string) Payload {
	var endpointID, language string
	if r != nil {
		endpointID, language = r.Endpoint.ID, r.Endpoint.Language
	}
	return c.payload(notificationID, endpointID, language, variant, r)
}

// payload is Payload with the endpoint id and the language given apart
// from the recipient whose values fill the merge tags (nil: the
// fallbacks), so that the size check can build any browser's copy.
func (c *Content) payload(notificationID, endpointID, language, variant string, r *store.Recipient) Payload {
	p := Payload{
		NotificationID:     notificationID,
		EndpointID:         endpointID,
		Title:              c.Title,
		Body:               c.Body,
		URL:                c.URL,
		Icon:               c.Icon,
		Image:              c.Image,
		Badge:              c.Badge,
		Actions:            c.Actions,
		RequireInteraction: c.RequireInteraction,
		Tag:                c.Tag,
	}
	if p.Actions == nil {
		p.Actions = []Action{}
	}
	if variant != "" {
		v := variant
		p.Variant = &v
	}
	if variant == "b" && c.B != nil {
		set := func(dst *string, src *string) {
			if src != nil {
				*dst = *src
			}
		}
		set(&p.Title, c.B.Title)
		set(&p.Body, c.B.Body)
		set(&p.URL, c.B.URL)
		set(&p.Image, c.B.Image)
	}
	if t, ok := c.translation(language); ok {
		if t.Title != "" {
			p.Title = t.Title
		}
		if t.Body != "" {
			p.Body = t.Body
		}
	}
	p.Title = mergeTags(p.Title, r, false)
	p.Body = mergeTags(p.Body, r, false)
	p.URL = mergeTags(p.URL, r, true)
	return p
}

// translation is the translation for a browser language ("de-DE" takes
// "de"), if the send has one.
func (c *Content) translation(language string) (Translation, bool) {
	if len(language) < 2 || len(c.Translations) == 0 {
		return Translation{}, false
	}
	t, ok := c.Translations[strings.ToLower(language[:2])]
	return t, ok
}
