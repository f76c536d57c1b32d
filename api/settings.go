package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/relaybell/relaybell/events"
	"github.com/relaybell/relaybell/integrations"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// Bounds of the website settings (spec 4.9 names the route; the shape is
// RelayBell's).
const (
	maxUTMChars           = 100
	maxConversionEvents   = 50
	maxFrequencyCapPushes = 100
	maxFrequencyCapHours  = 168
	maxAttributionHours   = 720
)

// settingsView is the answer of GET and PUT /settings. Null members are at
// the service's default: defaultUrl the website's address, defaultIcon none.
type settingsView struct {
	Timezone               string              `json:"timezone"`
	DefaultURL             *string             `json:"defaultUrl"`
	DefaultIcon            *string             `json:"defaultIcon"`
	UTM                    utmView             `json:"utm"`
	QuietHours             *store.QuietHours   `json:"quietHours"`
	FrequencyCap           *store.FrequencyCap `json:"frequencyCap"`
	RevenueCurrency        *string             `json:"revenueCurrency"`
	ConversionEvents       []string            `json:"conversionEvents"`
	AttributionWindowHours int                 `json:"attributionWindowHours"`
	// ProductAlertTexts are the texts of the website's product alerts,
	// its own or the defaults.
	ProductAlertTexts store.AlertTexts `json:"productAlertTexts"`
	// CommerceExternalID is what of a commerce platform's customer is the
	// externalId of its events: customerId (the default) or email.
	CommerceExternalID string `json:"commerceExternalId"`
	// CommerceSigningSecret only goes to keys with full or settings:write
	// (spec 5, rule 2).
	CommerceSigningSecret *string `json:"commerceSigningSecret,omitempty"`
}

type utmView struct {
	Source   string `json:"source"`
	Medium   string `json:"medium"`
	Campaign string `json:"campaign"`
}

// settingsPatch is the body of PUT /settings: members left out stay,
// null puts one back to its default.
type settingsPatch struct {
	Timezone               json.RawMessage `json:"timezone"`
	DefaultURL             json.RawMessage `json:"defaultUrl"`
	DefaultIcon            json.RawMessage `json:"defaultIcon"`
	UTM                    json.RawMessage `json:"utm"`
	QuietHours             json.RawMessage `json:"quietHours"`
	FrequencyCap           json.RawMessage `json:"frequencyCap"`
	RevenueCurrency        json.RawMessage `json:"revenueCurrency"`
	ConversionEvents       json.RawMessage `json:"conversionEvents"`
	AttributionWindowHours json.RawMessage `json:"attributionWindowHours"`
	ProductAlertTexts      json.RawMessage `json:"productAlertTexts"`
	// RotateCommerceSigningSecret: true replaces the secret.
	RotateCommerceSigningSecret json.RawMessage `json:"rotateCommerceSigningSecret"`
	CommerceExternalID          json.RawMessage `json:"commerceExternalId"`
	// now is when the patch applies (a rotation's grace period starts).
	now time.Time
}

func (a *API) settingsRoutes(rt *router) {
	rt.add(&route{method: http.MethodGet, pattern: "/api/v1/settings", auth: authKey, handle: a.handleGetSettings})
	rt.add(&route{method: http.MethodPut, pattern: "/api/v1/settings", auth: authKey, scope: ScopeSettingsWrite, handle: a.handlePutSettings})
}

// handleGetSettings serves GET /api/v1/settings. A website made before the
// commerce secret existed gets one on the first read that may see it.
func (a *API) handleGetSettings(r *request) error {
	w := r.owner.Website
	if mayReadSecret(r) && w.Settings.CommerceSecret == "" {
		var err error
		w, err = a.st.UpdateWebsite(r.ctx, w.ID, func(w *store.Website) error {
			if w.Settings.CommerceSecret == "" {
				w.Settings.CommerceSecret = newCommerceSecret()
			}
			return nil
		})
		if err != nil {
			return err
		}
		a.keys.purge()
	}
	return r.json(http.StatusOK, map[string]settingsView{"settings": viewSettings(r, w)})
}

// handlePutSettings serves PUT /api/v1/settings.
func (a *API) handlePutSettings(r *request) error {
	var p settingsPatch
	if err := decodeJSON(r.fc.Request.Body(), &p, strict); err != nil {
		return err
	}
	p.now = r.now
	var members map[string]json.RawMessage
	if json.Unmarshal(r.fc.Request.Body(), &members) != nil || len(members) == 0 {
		return errorf(CodeNothingToUpdate, "send at least one setting")
	}
	w, err := a.st.UpdateWebsite(r.ctx, r.owner.Website.ID, func(w *store.Website) error {
		return p.apply(w)
	})
	if err != nil {
		return err
	}
	a.keys.purge() // the key cache holds the website; this node sees the change at once
	return r.json(http.StatusOK, map[string]settingsView{"settings": viewSettings(r, w)})
}

func mayReadSecret(r *request) bool {
	return r.may(ScopeSettingsWrite)
}

func viewSettings(r *request, w store.Website) settingsView {
	s := w.Settings
	v := settingsView{
		Timezone:               w.Timezone,
		DefaultURL:             nonEmpty(s.DefaultURL),
		DefaultIcon:            nonEmpty(s.DefaultIcon),
		UTM:                    utmView{s.UTMSource, s.UTMMedium, s.UTMCampaign},
		QuietHours:             s.QuietHours,
		FrequencyCap:           s.FrequencyCap,
		RevenueCurrency:        nonEmpty(s.Currency),
		ConversionEvents:       s.ConversionNames(),
		AttributionWindowHours: int(s.Attribution().Hours()),
		ProductAlertTexts:      events.AlertTexts(s),
		CommerceExternalID:     integrations.ByCustomerID,
	}
	if s.CommerceExternalID != "" {
		v.CommerceExternalID = s.CommerceExternalID
	}
	if mayReadSecret(r) {
		v.CommerceSigningSecret = nonEmpty(s.CommerceSecret)
	}
	return v
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func newCommerceSecret() string { return integrations.NewSecret() }

var currencyRe = regexp.MustCompile(`^[A-Za-z]{3}$`)

// apply checks the patch and writes it into w; nothing is written when a
// member is bad.
func (p settingsPatch) apply(w *store.Website) error {
	next := *w
	s := &next.Settings
	steps := []struct {
		raw   json.RawMessage
		name  string
		reset func()
		set   func(raw json.RawMessage) error
	}{
		{p.Timezone, "timezone", func() { next.Timezone = "UTC" }, func(raw json.RawMessage) error {
			tz, err := decodeMember[string](raw, "timezone")
			if err != nil {
				return err
			}
			if !validTimezone(tz) {
				return errorf(CodeInvalidTZ, "unknown time zone %q", tz)
			}
			next.Timezone = tz
			return nil
		}},
		{p.DefaultURL, "defaultUrl", func() { s.DefaultURL = "" }, func(raw json.RawMessage) error {
			return setLink(raw, "defaultUrl", &s.DefaultURL)
		}},
		{p.DefaultIcon, "defaultIcon", func() { s.DefaultIcon = "" }, func(raw json.RawMessage) error {
			return setLink(raw, "defaultIcon", &s.DefaultIcon)
		}},
		{p.UTM, "utm", func() { s.UTMSource, s.UTMMedium, s.UTMCampaign = "", "", "" }, func(raw json.RawMessage) error {
			var u utmView
			if err := decodeJSON(raw, &u, strict); err != nil {
				return errorf(err.Code, "utm: %s", err.Message)
			}
			for _, v := range []string{u.Source, u.Medium, u.Campaign} {
				if utf8.RuneCountInString(v) > maxUTMChars {
					return errorf(CodeInvalidJSON, "utm values are at most %d characters", maxUTMChars)
				}
			}
			s.UTMSource, s.UTMMedium, s.UTMCampaign = strings.TrimSpace(u.Source), strings.TrimSpace(u.Medium), strings.TrimSpace(u.Campaign)
			return nil
		}},
		{p.QuietHours, "quietHours", func() { s.QuietHours = nil }, func(raw json.RawMessage) error {
			var q store.QuietHours
			if err := decodeJSON(raw, &q, strict); err != nil {
				return errorf(err.Code, "quietHours: %s", err.Message)
			}
			start, ok1 := notification.ClockTime(q.Start)
			end, ok2 := notification.ClockTime(q.End)
			if !ok1 || !ok2 || start == end {
				return errorf(CodeInvalidJSON, "quietHours needs start and end as H:MM or HH:MM, and they must differ")
			}
			s.QuietHours = &store.QuietHours{Start: start, End: end}
			return nil
		}},
		{p.FrequencyCap, "frequencyCap", func() { s.FrequencyCap = nil }, func(raw json.RawMessage) error {
			var c store.FrequencyCap
			if err := decodeJSON(raw, &c, strict); err != nil {
				return errorf(err.Code, "frequencyCap: %s", err.Message)
			}
			if c.Max < 1 || c.Max > maxFrequencyCapPushes || c.Hours < 1 || c.Hours > maxFrequencyCapHours {
				return errorf(CodeInvalidJSON, "frequencyCap needs max 1-%d and hours 1-%d", maxFrequencyCapPushes, maxFrequencyCapHours)
			}
			s.FrequencyCap = &c
			return nil
		}},
		{p.RevenueCurrency, "revenueCurrency", func() { s.Currency = "" }, func(raw json.RawMessage) error {
			c, err := decodeMember[string](raw, "revenueCurrency")
			if err != nil {
				return err
			}
			if !currencyRe.MatchString(c) {
				return errorf(CodeInvalidJSON, "revenueCurrency is a three-letter ISO 4217 code")
			}
			s.Currency = strings.ToUpper(c)
			return nil
		}},
		{p.ConversionEvents, "conversionEvents", func() { s.ConversionEvents = nil }, func(raw json.RawMessage) error {
			names, err := decodeMember[[]string](raw, "conversionEvents")
			if err != nil {
				return err
			}
			if len(names) > maxConversionEvents {
				return errorf(CodeInvalidJSON, "conversionEvents holds at most %d names", maxConversionEvents)
			}
			s.ConversionEvents = nil
			for _, n := range names {
				n = strings.TrimSpace(n)
				if n == "" || utf8.RuneCountInString(n) > events.MaxName {
					return errorf(CodeInvalidJSON, "conversion event names are 1-%d characters", events.MaxName)
				}
				if !slices.Contains(s.ConversionEvents, n) {
					s.ConversionEvents = append(s.ConversionEvents, n)
				}
			}
			return nil
		}},
		{p.AttributionWindowHours, "attributionWindowHours", func() { s.AttributionHours = 0 }, func(raw json.RawMessage) error {
			h, err := decodeMember[int](raw, "attributionWindowHours")
			if err != nil {
				return err
			}
			if h < 1 || h > maxAttributionHours {
				return errorf(CodeInvalidJSON, "attributionWindowHours is 1-%d", maxAttributionHours)
			}
			s.AttributionHours = h
			return nil
		}},
		{p.ProductAlertTexts, "productAlertTexts", func() { s.AlertTexts = nil }, func(raw json.RawMessage) error {
			var t store.AlertTexts
			if err := decodeJSON(raw, &t, strict); err != nil {
				return errorf(err.Code, "productAlertTexts: %s", err.Message)
			}
			for _, x := range []*store.AlertText{&t.BackInStock, &t.PriceDrop} {
				x.Title, x.Body = strings.TrimSpace(x.Title), strings.TrimSpace(x.Body)
				if utf8.RuneCountInString(x.Title) > events.MaxAlertTitle || utf8.RuneCountInString(x.Body) > events.MaxAlertBody {
					return errorf(CodeInvalidJSON, "productAlertTexts: a title is at most %d characters and a body at most %d", events.MaxAlertTitle, events.MaxAlertBody)
				}
			}
			s.AlertTexts = &t
			return nil
		}},
		{p.RotateCommerceSigningSecret, "rotateCommerceSigningSecret", func() {}, func(raw json.RawMessage) error {
			rotate, err := decodeMember[bool](raw, "rotateCommerceSigningSecret")
			if err != nil {
				return err
			}
			if rotate {
				integrations.Rotate(s, p.now)
			}
			return nil
		}},
		{p.CommerceExternalID, "commerceExternalId", func() { s.CommerceExternalID = "" }, func(raw json.RawMessage) error {
			by, err := decodeMember[string](raw, "commerceExternalId")
			if err != nil {
				return err
			}
			switch by {
			case integrations.ByCustomerID:
				s.CommerceExternalID = ""
			case integrations.ByEmail:
				s.CommerceExternalID = by
			default:
				return errorf(CodeInvalidJSON, "commerceExternalId is customerId or email")
			}
			return nil
		}},
	}
	for _, st := range steps {
		switch {
		case st.raw == nil:
		case bytes.Equal(st.raw, []byte("null")):
			st.reset()
		default:
			if err := st.set(st.raw); err != nil {
				return err
			}
		}
	}
	*w = next
	return nil
}

// decodeMember reads one member of a body as T; the wrong type is 400
// invalid_json naming the member.
func decodeMember[T any](raw json.RawMessage, name string) (T, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, errorf(CodeInvalidJSON, "%s has the wrong type", name)
	}
	return v, nil
}

// setLink sets an http(s) link; "" clears it.
func setLink(raw json.RawMessage, name string, dst *string) error {
	link, err := decodeMember[string](raw, name)
	if err != nil {
		return err
	}
	if strings.TrimSpace(link) == "" {
		*dst = ""
		return nil
	}
	u, apiErr := websiteURL(link)
	if apiErr != nil {
		return errorf(CodeInvalidURL, "%s must be an absolute http(s) URL", name)
	}
	*dst = u
	return nil
}
