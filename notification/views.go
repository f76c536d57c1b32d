package notification

import (
	"encoding/json"
	"time"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/store"
)

// TimeLayout is how the API writes date-times: UTC with milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// TimeOrNil formats t in the API's time layout, or nil.
func TimeOrNil(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(TimeLayout)
	return &s
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Item is a notification in a list (spec 2.3).
type Item struct {
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
	Ctr           float64 `json:"ctr"`
	Conversions   int64   `json:"conversions"`
	Revenue       float64 `json:"revenue"`
	AB            bool    `json:"ab"`
	TargetSummary string  `json:"targetSummary"`
	Automation    bool    `json:"automation"`
	ScheduleID    string  `json:"scheduleId,omitempty"`
	Welcome       bool    `json:"welcome"`
	FeedID        string  `json:"feedId,omitempty"`
	Error         *string `json:"error"`
}

// ListItem renders a notification for GET /notifications.
func ListItem(n store.Notification) Item {
	return Item{
		ID:            n.ID,
		Title:         n.Title,
		Body:          nullable(n.Body),
		Status:        n.Status,
		CreatedAt:     n.CreatedAt.UTC().Format(TimeLayout),
		ScheduledAt:   TimeOrNil(n.ScheduledAt),
		Recipients:    n.Recipients,
		Sent:          n.Sent,
		Delivered:     n.Delivered,
		Failed:        n.Failed,
		Pruned:        n.Pruned,
		Clicked:       n.Clicked,
		Ctr:           analytics.Ctr(n.Clicked, n.Sent),
		Conversions:   n.Conversions,
		Revenue:       n.Revenue,
		AB:            n.AB,
		TargetSummary: n.TargetSummary,
		Automation:    n.Automation,
		ScheduleID:    n.ScheduleID,
		Welcome:       n.Welcome,
		FeedID:        n.FeedID,
		Error:         nullable(n.Error),
	}
}

// DetailView is GET /notifications/{id} (spec 2.4).
type DetailView struct {
	Notification DetailNotification      `json:"notification"`
	Funnel       Funnel                  `json:"funnel"`
	Devices      []analytics.DeviceRow   `json:"devices"`
	Variants     []analytics.VariantRow  `json:"variants"`
	Languages    []analytics.LanguageRow `json:"languages"`
	Errors       []analytics.ErrorRow    `json:"errors"`
	Revenue      float64                 `json:"revenue"`
	Currency     *string                 `json:"currency"`
	// Conversions tells the conversions credited for a click from those
	// credited for a delivery alone (influenced).
	ConversionsBy ConversionSplit `json:"conversionsBy"`
	SendBody      json.RawMessage `json:"sendBody"`
}

// ConversionSplit is the detail's conversions by what they were credited
// for.
type ConversionSplit struct {
	ClickThrough int64 `json:"clickThrough"`
	Influenced   int64 `json:"influenced"`
}

// DetailNotification is the notification member of the detail.
type DetailNotification struct {
	ID                 string                 `json:"id"`
	Title              string                 `json:"title"`
	Body               *string                `json:"body"`
	URL                *string                `json:"url"`
	Icon               *string                `json:"icon"`
	Image              *string                `json:"image"`
	Badge              *string                `json:"badge"`
	Actions            []Action               `json:"actions"`
	RequireInteraction bool                   `json:"require_interaction"`
	Tag                *string                `json:"tag"`
	Status             string                 `json:"status"`
	CreatedAt          string                 `json:"created_at"`
	ScheduledAt        *string                `json:"scheduled_at"`
	Target             json.RawMessage        `json:"target"`
	TargetSummary      string                 `json:"targetSummary"`
	Automation         bool                   `json:"automation"`
	AutomationID       *string                `json:"automation_id"`
	ScheduleID         string                 `json:"scheduleId,omitempty"`
	Welcome            bool                   `json:"welcome"`
	FeedID             string                 `json:"feedId,omitempty"`
	Transactional      bool                   `json:"transactional"`
	AB                 *Variant               `json:"ab"`
	ABTest             *ABSettings            `json:"ab_test"`
	Translations       map[string]Translation `json:"translations"`
	TTL                int                    `json:"ttl"`
	PerTimezone        bool                   `json:"per_timezone"`
	LocalTime          *string                `json:"local_time"`
	Stats              Stats                  `json:"stats"`
	Error              *string                `json:"error"`
	Recipients         int64                  `json:"recipients"`
	Processed          int64                  `json:"processed"`
	Sent               int64                  `json:"sent"`
	Delivered          int64                  `json:"delivered"`
	Failed             int64                  `json:"failed"`
	Pruned             int64                  `json:"pruned"`
	Clicked            int64                  `json:"clicked"`
	Ctr                float64                `json:"ctr"`
	Conversions        int64                  `json:"conversions"`
	Revenue            float64                `json:"revenue"`
}

// Stats tells when a send went out.
type Stats struct {
	QueuedAt   *string `json:"queued_at"`
	StartedAt  *string `json:"started_at"`
	FinishedAt *string `json:"finished_at"`
	DurationMs *int64  `json:"duration_ms"`
}

// Funnel is the detail's funnel.
type Funnel struct {
	Recipients int64 `json:"recipients"`
	Sent       int64 `json:"sent"`
	Delivered  int64 `json:"delivered"`
	Clicked    int64 `json:"clicked"`
	Converted  int64 `json:"converted"`
	Failed     int64 `json:"failed"`
	Expired    int64 `json:"expired"`
}

// Detail renders the notification detail from the stored send and its
// analytics report. currency is the website's revenue currency, if any.
func Detail(n store.Notification, rep analytics.Report, currency *string) DetailView {
	c, err := DecodeContent(n.Content)
	if err != nil {
		c = &Content{Title: n.Title, Body: n.Body}
	}
	d := DetailNotification{
		ID:                 n.ID,
		Title:              n.Title,
		Body:               nullable(c.Body),
		URL:                nullable(c.URL),
		Icon:               nullable(c.Icon),
		Image:              nullable(c.Image),
		Badge:              nullable(c.Badge),
		Actions:            c.Actions,
		RequireInteraction: c.RequireInteraction,
		Tag:                nullable(c.Tag),
		Status:             n.Status,
		CreatedAt:          n.CreatedAt.UTC().Format(TimeLayout),
		ScheduledAt:        TimeOrNil(n.ScheduledAt),
		Target:             json.RawMessage("null"),
		TargetSummary:      n.TargetSummary,
		Automation:         n.Automation,
		AutomationID:       nullable(n.AutomationID),
		ScheduleID:         n.ScheduleID,
		Welcome:            n.Welcome,
		FeedID:             n.FeedID,
		Transactional:      n.Transactional,
		AB:                 c.B,
		ABTest:             c.ABTest,
		Translations:       c.Translations,
		TTL:                c.TTL,
		PerTimezone:        c.PerTimezone,
		LocalTime:          nullable(c.LocalTime),
		Error:              nullable(n.Error),
		Recipients:         n.Recipients,
		Processed:          n.Processed,
		Sent:               n.Sent,
		Delivered:          n.Delivered,
		Failed:             n.Failed,
		Pruned:             n.Pruned,
		Clicked:            n.Clicked,
		Ctr:                analytics.Ctr(n.Clicked, n.Sent),
		Conversions:        n.Conversions,
		Revenue:            n.Revenue,
	}
	if c.SmartTime {
		s := "smart"
		d.LocalTime = &s
	}
	if len(n.Target) > 0 {
		d.Target = n.Target
	}
	d.Stats = Stats{QueuedAt: TimeOrNil(n.PublishedAt), StartedAt: TimeOrNil(n.StartedAt), FinishedAt: TimeOrNil(n.FinishedAt)}
	if n.StartedAt != nil && n.FinishedAt != nil {
		ms := n.FinishedAt.Sub(*n.StartedAt).Milliseconds()
		d.Stats.DurationMs = &ms
	}
	v := DetailView{
		Notification: d,
		Funnel: Funnel{
			Recipients: n.Recipients, Sent: n.Sent, Delivered: n.Delivered, Clicked: n.Clicked,
			Converted: n.Conversions, Failed: n.Failed, Expired: n.Pruned,
		},
		Devices:       orEmpty(rep.Devices),
		Variants:      orEmpty(rep.Variants),
		Languages:     orEmpty(rep.Languages),
		Errors:        orEmpty(rep.Errors),
		Revenue:       n.Revenue,
		Currency:      currency,
		ConversionsBy: ConversionSplit{ClickThrough: n.ClickConversions, Influenced: n.Conversions - n.ClickConversions},
		SendBody:      json.RawMessage("null"),
	}
	if len(n.SendBody) > 0 && !n.Automation {
		v.SendBody = n.SendBody
	}
	return v
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
