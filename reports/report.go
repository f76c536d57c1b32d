package reports

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/stats"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/webpush"
)

// Reader is what a report reads of the store.
type Reader interface {
	stats.Reader
	ListNotifications(ctx context.Context, q store.ListQuery) ([]store.Notification, error)
	WebhooksOf(ctx context.Context, websiteID string) ([]store.Webhook, error)
	ListFeeds(ctx context.Context, websiteID string) ([]store.Feed, error)
	ListSchedules(ctx context.Context, websiteID string) ([]store.Schedule, error)
	DeliveryTrouble(ctx context.Context, websiteID string, notificationIDs []string) ([]store.ServiceTrouble, error)
}

// Ranked is how many sends each of the best and the worst lists holds.
const Ranked = 5

// maxSends bounds the sends of a period a report ranks (the newest).
const maxSends = 2000

// Report is a website's report for one period.
type Report struct {
	Website  string // its name
	Timezone string
	Period   Period
	// Current and Previous are the period's figures and the period
	// before's, as GET /stats counts them over the same days. Their
	// Subscribers are the browsers subscribed at the end of the period.
	Current, Previous stats.Counts
	// Days are the period's days, for the chart.
	Days []stats.DayStats
	// Best and Worst are the period's sends (made in it, test sends
	// aside, at least one push sent) with the highest and the lowest CTR.
	Best, Worst []Send
	Health      Health
}

// Send is one ranked send.
type Send struct {
	ID        string
	Title     string
	CreatedAt time.Time
	Sent      int64
	Clicked   int64
	Ctr       float64
}

// Health is how delivery went: the period's failed and pruned pushes, in
// all and by push service, and what is in trouble now.
type Health struct {
	Failed, Pruned int64
	// Services are the failed and pruned pushes by the push service of
	// their endpoints, the services with any in webpush.Services' order.
	// They add up to Failed and Pruned: a result recorded before the
	// service was kept, or of a person erased since, counts as other.
	Services []store.ServiceTrouble
	// Webhooks failing now (failed since a time) or turned off.
	Webhooks []Trouble
	// Feeds paused by something else than their owner, or failing.
	Feeds []Trouble
	// Schedules paused by something else than their owner.
	Schedules []Trouble
}

// Trouble names what is in trouble and why.
type Trouble struct {
	Name   string
	Reason string
}

// Build reads website's report for period p at now.
func Build(ctx context.Context, r Reader, w store.Website, p Period, now time.Time) (Report, error) {
	loc, err := time.LoadLocation(w.Timezone)
	if err != nil {
		loc = time.UTC
	}
	rep := Report{Website: w.Name, Timezone: loc.String(), Period: p}
	cur, err := stats.Read(ctx, r, stats.Query{WebsiteID: w.ID, From: p.From, To: p.To, Loc: loc, Now: now})
	if err != nil {
		return Report{}, fmt.Errorf("reading the period's stats: %w", err)
	}
	prev, err := stats.Read(ctx, r, stats.Query{WebsiteID: w.ID, From: p.PrevFrom, To: p.PrevTo, Loc: loc, Now: now})
	if err != nil {
		return Report{}, fmt.Errorf("reading the previous period's stats: %w", err)
	}
	rep.Current, rep.Previous, rep.Days = atEnd(cur), atEnd(prev), cur.Days

	sends, err := periodSends(ctx, r, w.ID, p.From.Start(loc), p.To.AddDays(1).Start(loc))
	if err != nil {
		return Report{}, err
	}
	var ranked []Send
	ids := make([]string, len(sends))
	for i, n := range sends {
		ids[i] = n.ID
		rep.Health.Failed += n.Failed
		rep.Health.Pruned += n.Pruned
		if n.Sent > 0 {
			ranked = append(ranked, Send{ID: n.ID, Title: n.Title, CreatedAt: n.CreatedAt, Sent: n.Sent, Clicked: n.Clicked,
				Ctr: analytics.Ctr(n.Clicked, n.Sent)})
		}
	}
	byCtr := func(a, b Send) int {
		return cmp.Or(cmp.Compare(b.Ctr, a.Ctr), cmp.Compare(b.Sent, a.Sent), cmp.Compare(a.ID, b.ID))
	}
	slices.SortFunc(ranked, byCtr)
	rep.Best = slices.Clone(ranked[:min(Ranked, len(ranked))])
	slices.SortFunc(ranked, func(a, b Send) int {
		return cmp.Or(cmp.Compare(a.Ctr, b.Ctr), cmp.Compare(b.Sent, a.Sent), cmp.Compare(a.ID, b.ID))
	})
	rep.Worst = slices.Clone(ranked[:min(Ranked, len(ranked))])

	if rep.Health.Services, err = byService(ctx, r, w.ID, ids, rep.Health); err != nil {
		return Report{}, err
	}
	if rep.Health, err = health(ctx, r, w.ID, rep.Health); err != nil {
		return Report{}, err
	}
	return rep, nil
}

// byService is the failed and pruned pushes of the sends ids by push
// service (Health.Services): other has those of no known service, results
// recorded before the service was kept and those of people erased since
// (whose results are deleted, their counts in the sends kept), so that
// the services add up to the totals h holds.
func byService(ctx context.Context, r Reader, websiteID string, ids []string, h Health) ([]store.ServiceTrouble, error) {
	counts, err := r.DeliveryTrouble(ctx, websiteID, ids)
	if err != nil {
		return nil, fmt.Errorf("counting failed pushes by push service: %w", err)
	}
	var out []store.ServiceTrouble
	failed, pruned := h.Failed, h.Pruned // left for other, the last service
	for _, name := range webpush.Services {
		t := store.ServiceTrouble{Service: name}
		if name == "other" {
			t.Failed, t.Pruned = failed, pruned
		} else if i := slices.IndexFunc(counts, func(c store.ServiceTrouble) bool { return c.Service == name }); i >= 0 {
			t.Failed, t.Pruned = counts[i].Failed, counts[i].Pruned
			failed, pruned = failed-t.Failed, pruned-t.Pruned
		}
		if t.Failed > 0 || t.Pruned > 0 {
			out = append(out, t)
		}
	}
	return out, nil
}

// atEnd is a stats report's totals with the subscribers at the end of its
// last day (the totals' are those of now).
func atEnd(r stats.Report) stats.Counts {
	c := r.Totals
	if len(r.Days) > 0 {
		c.Subscribers = r.Days[len(r.Days)-1].Subscribers
	}
	return c
}

// periodSends lists the website's sends made in [from, to), test sends
// aside, newest first, at most maxSends.
func periodSends(ctx context.Context, r Reader, websiteID string, from, to time.Time) ([]store.Notification, error) {
	var out []store.Notification
	q := store.ListQuery{WebsiteID: websiteID, Limit: 200, From: from, To: to}
	for len(out) < maxSends {
		page, err := r.ListNotifications(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("listing the period's sends: %w", err)
		}
		for _, n := range page {
			if !n.Test {
				out = append(out, n)
			}
		}
		if len(page) < q.Limit {
			break
		}
		q.BeforeSeq = page[len(page)-1].Seq
	}
	return out, nil
}

func health(ctx context.Context, r Reader, websiteID string, h Health) (Health, error) {
	hooks, err := r.WebhooksOf(ctx, websiteID)
	if err != nil {
		return h, fmt.Errorf("listing webhooks: %w", err)
	}
	for _, wh := range hooks {
		switch {
		case !wh.Enabled && wh.DisabledReason != "":
			h.Webhooks = append(h.Webhooks, Trouble{Name: wh.URL, Reason: "turned off: " + wh.DisabledReason})
		case wh.Enabled && wh.ConsecutiveFailures > 0:
			h.Webhooks = append(h.Webhooks, Trouble{Name: wh.URL, Reason: fmt.Sprintf("%d deliveries failed in a row", wh.ConsecutiveFailures)})
		}
	}
	feeds, err := r.ListFeeds(ctx, websiteID)
	if err != nil {
		return h, fmt.Errorf("listing feeds: %w", err)
	}
	for _, f := range feeds {
		switch {
		case f.Status == store.FeedPaused && f.PausedReason != "":
			h.Feeds = append(h.Feeds, Trouble{Name: f.Name, Reason: "paused: " + f.PausedReason})
		case f.Status == store.FeedActive && f.FailingSince != nil:
			h.Feeds = append(h.Feeds, Trouble{Name: f.Name, Reason: "failing since " + f.FailingSince.UTC().Format(time.RFC3339)})
		}
	}
	scheds, err := r.ListSchedules(ctx, websiteID)
	if err != nil {
		return h, fmt.Errorf("listing schedules: %w", err)
	}
	for _, s := range scheds {
		if s.Status == store.SchedulePaused && s.PausedReason != "" {
			h.Schedules = append(h.Schedules, Trouble{Name: s.Name, Reason: "paused: " + s.PausedReason})
		}
	}
	return h, nil
}
