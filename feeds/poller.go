package feeds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaybell/relaybell/lease"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/review"
	"github.com/relaybell/relaybell/store"
)

// Store is what the poller and the service need of the store.
type Store interface {
	store.Feeds
	notification.Lookup
	Website(ctx context.Context, id string) (store.Website, error)
	Account(ctx context.Context, id string) (store.Account, error)
	Members(ctx context.Context, accountID string) ([]store.Member, error)
	review.Store
}

// Dispatcher publishes a stored send's intent; a failure leaves it to
// the outbox sweep.
type Dispatcher interface {
	Dispatch(ctx context.Context, n store.Notification) error
}

// PauseAfter is how long a feed keeps failing before it is paused.
const PauseAfter = 24 * time.Hour

// Config tunes a Poller; the zero value is the defaults.
type Config struct {
	// Every is the longest the poller sleeps between looks for due
	// feeds; default 5s.
	Every time.Duration
	// Lease is how long a claimed feed stays the claimer's before another
	// node may take it (the claimer died); default 2m, more than a fetch
	// and its sends take. A feed polled slower than its lease may be
	// polled twice at once; each item is still sent once.
	Lease time.Duration
	// Workers is how many feeds one node polls at once; default 8.
	Workers int
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Fetch tunes the fetches.
	Fetch FetchConfig
	// NoSendLimits turns off the hourly broadcast budget (the API's
	// RELAYBELL_NO_SEND_LIMITS), for load runs only.
	NoSendLimits bool
	// ReviewThreshold is the API's (package review): an item's send that
	// is a new account's first broadcast to at least this many browsers
	// is stored held_for_review, as POST /notifications stores it; 0 is
	// review.DefaultThreshold, negative: never.
	ReviewThreshold int
	// BeforeSend, when set, runs before each item's send transaction
	// (tests and the failpoints of fault tests).
	BeforeSend func(feedID, key string)
}

func (c Config) withDefaults() Config {
	if c.Every <= 0 {
		c.Every = 5 * time.Second
	}
	if c.Lease <= 0 {
		c.Lease = 2 * time.Minute
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	if t := c.Fetch.Timeout; t > 0 && c.Lease <= t {
		return errors.New("feeds: the lease must be longer than the fetch timeout")
	}
	return nil
}

// Poller polls due feeds and sends their new items. Any number of pollers
// may run on one store.
type Poller struct {
	cfg    Config
	st     Store
	fetch  *Fetcher
	disp   Dispatcher
	tpl    Templates
	logger *slog.Logger
	sent   prometheus.Counter
	polls  *prometheus.CounterVec
}

// NewPoller returns a poller. disp may be nil (the outbox sweep publishes
// every send), tpl nil (a feed naming a templateId then fails its polls),
// reg nil.
func NewPoller(cfg Config, st Store, disp Dispatcher, tpl Templates, logger *slog.Logger, reg prometheus.Registerer) (*Poller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	p := &Poller{cfg: cfg, st: st, fetch: NewFetcher(cfg.Fetch), disp: disp, tpl: tpl, logger: logger,
		sent: prometheus.NewCounter(prometheus.CounterOpts{Name: "relaybell_feed_items_sent_total",
			Help: "Feed items sent as notifications."}),
		polls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "relaybell_feed_polls_total",
			Help: "Feed polls, by outcome (ok, failed)."}, []string{"outcome"})}
	if reg != nil {
		for _, c := range []prometheus.Collector{p.sent, p.polls} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("registering feed metrics: %w", err)
			}
		}
	}
	return p, nil
}

// Run polls due feeds until ctx ends.
func (p *Poller) Run(ctx context.Context) error {
	return lease.Loop{What: "polling feeds", Poll: p.cfg.Every, RunDue: p.RunDue, Again: true, Logger: p.logger}.Run(ctx)
}

// RunDue claims the feeds due now, up to Workers, and polls them at once.
// It returns how many it polled.
func (p *Poller) RunDue(ctx context.Context) (int, error) {
	due, err := p.st.ClaimFeeds(ctx, p.cfg.Now(), p.cfg.Lease, p.cfg.Workers)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, f := range due {
		wg.Go(func() {
			if _, err := p.Poll(ctx, f); err != nil && ctx.Err() == nil {
				p.logger.Warn("polling feed", "feed", f.ID, "err", err)
			}
		})
	}
	wg.Wait()
	return len(due), nil
}

// ErrPollInProgress is PollNow's error while another poll of the feed
// holds its lease.
var ErrPollInProgress = errors.New("feeds: a poll of this feed is in progress")

// ErrNotVerified is the poll's error while the account's e-mail address
// is not verified: its items wait.
var ErrNotVerified = errors.New("the account's e-mail address is not verified: new items wait until it is")

// ErrPaused is PollNow's error for a paused feed.
var ErrPaused = errors.New("feeds: the feed is paused")

// PollNow polls one of the website's feeds now, due or not, and returns
// the poll's outcome. store.ErrNotFound for an unknown feed.
func (p *Poller) PollNow(ctx context.Context, websiteID, id string) (Outcome, error) {
	f, err := p.st.Feed(ctx, websiteID, id)
	if err != nil {
		return Outcome{}, err
	}
	if f.Status != store.FeedActive {
		return Outcome{}, ErrPaused
	}
	f, err = p.st.ClaimFeed(ctx, websiteID, id, p.cfg.Now(), p.cfg.Lease)
	if errors.Is(err, store.ErrConflict) {
		return Outcome{}, ErrPollInProgress
	}
	if err != nil {
		return Outcome{}, err
	}
	return p.Poll(ctx, f)
}

// Outcome is what one poll did.
type Outcome struct {
	store.FeedPoll
	// Sent counts the items sent by this poll (new ones, or ones that
	// waited).
	Sent int
	// BudgetRefused is set when the hourly broadcast budget held items
	// back.
	BudgetRefused bool
	// Paused is the reason the poll paused the feed ("" when it did not).
	Paused string
}

// Poll polls a feed this poller holds the lease of: it fetches it,
// records its new items, sends up to MaxPerPoll waiting items, and records
// the outcome, ending the lease.
func (p *Poller) Poll(ctx context.Context, f store.Feed) (Outcome, error) {
	now := p.cfg.Now()
	out := Outcome{FeedPoll: store.FeedPoll{At: now}}
	d, err := Of(f)
	if err != nil {
		return out, err
	}
	fetched, ferr := p.fetch.Fetch(ctx, f.URL, f.ETag, f.LastModified)
	out.HTTPStatus = fetched.Status
	if ferr != nil {
		out.Error = ferr.Error()
	} else if !fetched.NotModified {
		items := make([]store.FeedItem, 0, len(fetched.Items))
		for _, it := range fetched.Items {
			key := it.Key()
			if key == "" {
				continue
			}
			data, err := json.Marshal(it)
			if err != nil {
				return out, fmt.Errorf("encoding feed item: %w", err)
			}
			items = append(items, store.FeedItem{Key: key, Data: data})
		}
		added, err := p.st.RecordFeedItems(ctx, f.WebsiteID, f.ID, store.FeedFetch{At: now, ETag: fetched.ETag,
			LastModified: fetched.LastModified, Items: items}, d.SendExisting)
		if err != nil {
			return out, err
		}
		out.NewItems = added
	}
	var refused *time.Time
	if out.Error == "" || f.Seeded {
		if err := p.sendPending(ctx, f, d, &out); err != nil {
			return out, err
		}
		if out.BudgetRefused {
			refused = &now
		}
	}
	next := now.Add(time.Duration(d.PollMinutes) * time.Minute)
	if out.BudgetRefused {
		// The budget's window ends at the next UTC clock hour: the items
		// go out then, when it has room again.
		if end := notification.BroadcastBudget(f.WebsiteID).WindowEnd(now); end.Before(next) {
			next = end
		}
	}
	if err := p.st.FinishFeedPoll(ctx, f.WebsiteID, f.ID, out.FeedPoll, next, refused); err != nil {
		return out, err
	}
	if out.Error != "" && !out.Waiting {
		p.polls.WithLabelValues("failed").Inc()
		since := now
		if f.FailingSince != nil {
			since = *f.FailingSince
		}
		if now.Sub(since) >= PauseAfter && out.Paused == "" {
			if err := p.pause(ctx, f, store.FeedPausedFailing, out.Error, now); err != nil {
				return out, err
			}
			out.Paused = store.FeedPausedFailing
		}
	} else {
		p.polls.WithLabelValues("ok").Inc()
	}
	return out, nil
}

// sendPending sends up to MaxPerPoll of the feed's waiting items, oldest
// first, each in the transaction that marks it sent.
func (p *Poller) sendPending(ctx context.Context, f store.Feed, d Definition, out *Outcome) error {
	pending, err := p.st.PendingFeedItems(ctx, f.ID, d.MaxPerPoll)
	if err != nil || len(pending) == 0 {
		return err
	}
	w, err := p.st.Website(ctx, f.WebsiteID)
	if err != nil {
		return fmt.Errorf("loading website: %w", err)
	}
	acct, err := p.st.Account(ctx, w.AccountID)
	if err != nil {
		return fmt.Errorf("loading account: %w", err)
	}
	if err := review.Verified(acct); err != nil {
		// As POST /notifications refuses it: the items wait, none lost,
		// until the address is verified.
		if out.Error == "" {
			out.Error, out.Waiting = ErrNotVerified.Error(), true
		}
		return nil
	}
	for _, pi := range pending {
		var it Item
		if err := json.Unmarshal(pi.Data, &it); err != nil {
			return fmt.Errorf("decoding feed item: %w", err)
		}
		req, err := Request(ctx, d, f.WebsiteID, it, p.tpl)
		if err != nil {
			if out.Error == "" {
				out.Error = "the template cannot be used: " + err.Error()
			}
			return nil // the items wait for the template to be fixed
		}
		now := p.cfg.Now()
		n, err := notification.Prepare(ctx, req, w, p.st, now)
		var ne *notification.Error
		switch {
		case errors.As(err, &ne) && (ne.Code == "unknown_topic" || ne.Code == "segment_not_found"):
			reason := store.FeedPausedTopicDeleted
			if ne.Code == "segment_not_found" {
				reason = "segment_deleted"
			}
			if err := p.pause(ctx, f, reason, ne.Message, now); err != nil {
				return err
			}
			out.Paused = reason
			return nil
		case errors.As(err, &ne):
			// The item's content is refused (too long for a push, a bad
			// link): it is skipped so that it holds up no other.
			p.logger.Warn("feed item refused", "feed", f.ID, "item", pi.Key, "err", err)
			if err := p.st.SkipFeedItem(ctx, f.ID, pi.Key); err != nil {
				return err
			}
			continue
		case err != nil:
			return err
		}
		if n.Status == store.StatusQueued || n.Status == store.StatusScheduled {
			held, err := review.Held(ctx, p.st, p.cfg.ReviewThreshold, acct, req, n, now)
			if err != nil {
				return fmt.Errorf("deciding review: %w", err)
			}
			if held {
				n.Status = store.StatusHeldForReview
			}
		}
		var budget *store.RateLimit
		if !p.cfg.NoSendLimits {
			b := notification.BroadcastBudget(f.WebsiteID)
			budget = &b
		}
		if p.cfg.BeforeSend != nil {
			p.cfg.BeforeSend(f.ID, pi.Key)
		}
		// The budget's unit is taken in the send's transaction: a
		// crash between them cannot spend one on nothing.
		sent, err := p.st.SendFeedItem(ctx, f.ID, pi.Key, n, budget, now)
		if errors.Is(err, store.ErrNoRoom) {
			out.BudgetRefused = true
			return nil
		}
		if err != nil {
			return err
		}
		if !sent {
			continue // another poll of the feed sent it
		}
		out.Sent++
		p.sent.Inc()
		if p.disp != nil && n.Status == store.StatusQueued {
			if err := p.disp.Dispatch(ctx, *n); err != nil {
				p.logger.Warn("dispatching feed item; the outbox sweep will retry", "notification", n.ID, "err", err)
			}
		}
	}
	return nil
}

// pause pauses the feed with reason, mails the account's owners and adds
// the feed.paused event, in one transaction.
func (p *Poller) pause(ctx context.Context, f store.Feed, reason, why string, at time.Time) error {
	w, err := p.st.Website(ctx, f.WebsiteID)
	if err != nil {
		return fmt.Errorf("loading website: %w", err)
	}
	to, err := p.owners(ctx, w.AccountID)
	if err != nil {
		return err
	}
	explain := map[string]string{
		store.FeedPausedFailing:      "every poll failed for a day (last: " + why + ")",
		store.FeedPausedTopicDeleted: "the topic it sends to was deleted",
		"segment_deleted":            "the segment it sends to was deleted",
	}[reason]
	var mails []store.Email
	for _, addr := range to {
		mails = append(mails, store.Email{ID: uuid.NewString(), To: addr, CreatedAt: at,
			Subject: "RelayBell paused the feed " + f.Name + " of " + w.Name,
			Body: fmt.Sprintf("RelayBell paused the feed %q (%s) of your website %s because %s.\n\n"+
				"Its new items are not sent while it is paused. Fix the feed, then turn it back on with\n"+
				"PUT /api/v1/feeds/%s and {\"status\": \"active\"}, or from the dashboard's Feeds page.\n",
				f.Name, f.URL, w.Name, explain, f.ID)})
	}
	data := store.FeedPausedData{FeedID: f.ID, Name: f.Name, URL: f.URL, Reason: reason, Error: why}
	paused, err := p.st.PauseFeed(ctx, f.WebsiteID, f.ID, reason, at, mails, store.EventFeedPaused, data)
	if err != nil {
		return err
	}
	if paused {
		p.logger.Warn("feed paused", "feed", f.ID, "website", f.WebsiteID, "reason", reason)
	}
	return nil
}

// owners are the addresses of the account's owners: its owner address
// and its members with the owner role, each once.
func (p *Poller) owners(ctx context.Context, accountID string) ([]string, error) {
	acct, err := p.st.Account(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("loading account: %w", err)
	}
	var out []string
	seen := map[string]bool{}
	add := func(addr string) {
		if addr != "" && !seen[addr] {
			seen[addr] = true
			out = append(out, addr)
		}
	}
	add(acct.OwnerEmail)
	members, err := p.st.Members(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("listing members: %w", err)
	}
	for _, m := range members {
		if m.Role == store.RoleOwner {
			add(m.Email)
		}
	}
	return out, nil
}
