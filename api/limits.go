package api

import (
	"strconv"
	"time"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// Request rates and send budgets of spec 8.1. They are counted in the store
// (store.TakeRateLimits), so every API node of a cluster draws on the same
// counters. Windows are fixed: whole minutes, and clock hours in UTC.
const (
	sendsPerMinute           = 60                             // POST /notifications and /{id}/send, per key
	sendsPerHour             = 600                            // the same, per key
	broadcastsPerHour        = notification.BroadcastsPerHour // per website
	specificUserSendsPerHour = 1000                           // per website
)

// Budget kinds, the kind member of a 429 send_limit_reached.
const (
	kindBroadcast     = "broadcast"
	kindSpecificUsers = "specific_users"
)

// keyLimits are the request rates of the key a send comes with; a
// dashboard send counts against its account's (spec 8.1).
func keyLimits(r *request) []store.RateLimit {
	who := "key:" + r.owner.Key.ID
	if r.bySession() {
		who = "account:" + r.owner.Account.ID
	}
	return []store.RateLimit{
		{Key: "send:" + who + ":1m", Window: time.Minute, Max: sendsPerMinute},
		{Key: "send:" + who + ":1h", Window: time.Hour, Max: sendsPerHour},
	}
}

// budgetOf is the hourly send budget of the website a send draws on:
// test sends have their own; sends to specific users, and transactional
// sends to a segment or filters, share one; every other send is a
// broadcast.
func budgetOf(websiteID string, req *notification.Request) (store.RateLimit, string) {
	if req.TestDevices {
		return store.RateLimit{Key: "send:website:" + websiteID + ":" + kindTestDevices, Window: time.Hour, Max: testSendsPerHour}, kindTestDevices
	} else if req.SpecificUsers() {
		return store.RateLimit{Key: "send:website:" + websiteID + ":" + kindSpecificUsers, Window: time.Hour, Max: specificUserSendsPerHour}, kindSpecificUsers
	}
	return notification.BroadcastBudget(websiteID), kindBroadcast
}

// takeSendLimits counts a send against its key's request rates and its
// website's budget, all or none, and sets the RateLimit-* headers. A send
// over a budget answers 429 send_limit_reached (retrying within the minute
// would not help); one over a request rate 429 rate_limited. A draft save
// (count false) counts nothing and only reports the key's rates.
func (a *API) takeSendLimits(r *request, req *notification.Request, count bool) error {
	if a.cfg.NoSendLimits {
		return nil
	}
	limits := keyLimits(r)
	if req.TestDevices {
		limits = nil // spec 8.1 counts test sends by website alone, not with the key's sends
	}
	kind := ""
	n := int64(0)
	if count {
		budget, k := budgetOf(r.owner.Website.ID, req)
		limits, kind, n = append(limits, budget), k, 1
	}
	used, taken, err := a.st.TakeRateLimits(r.ctx, limits, n, r.now)
	if err != nil {
		return err
	}
	if taken {
		// Report the limit closest to running out.
		best := 0
		for i, l := range limits {
			if l.Max-used[i] < limits[best].Max-used[best] {
				best = i
			}
		}
		setRateLimitHeaders(r, limits[best], used[best])
		return nil
	}
	// The budget decides when it is used up (it is the last limit):
	// retrying within the hour cannot help. Otherwise the key's rate that
	// frees up last; the minute when none shows an overrun (it filled
	// between the refused take and the read).
	over := 0
	for i, l := range limits {
		if used[i]+n > l.Max {
			over = i // limits go from the shortest window to the budget
		}
	}
	l := limits[over]
	setRateLimitHeaders(r, l, l.Max)
	retry := secondsUntil(r.now, l.WindowEnd(r.now))
	r.fc.Response.Header.Set("Retry-After", strconv.Itoa(retry))
	if kind != "" && over == len(limits)-1 {
		limit := int(l.Max)
		return &Error{Code: CodeSendLimitReached, Message: "the website's hourly budget of " + strconv.Itoa(limit) +
			" " + kind + " sends is used up", Limit: &limit, Kind: kind, RetryAfter: &retry}
	}
	who := "this key"
	if r.bySession() {
		who = "the dashboard (this account)"
	}
	return errorf(CodeRateLimited, "%s may send %d times a minute and %d times an hour", who, sendsPerMinute, sendsPerHour)
}

// setRateLimitHeaders reports one limit's state.
func setRateLimitHeaders(r *request, l store.RateLimit, used int64) {
	h := &r.fc.Response.Header
	h.Set("RateLimit-Limit", strconv.FormatInt(l.Max, 10))
	h.Set("RateLimit-Remaining", strconv.FormatInt(max(l.Max-used, 0), 10))
	h.Set("RateLimit-Reset", strconv.Itoa(secondsUntil(r.now, l.WindowEnd(r.now))))
}

// secondsUntil is the whole seconds from now to end, at least 1.
func secondsUntil(now, end time.Time) int {
	return max(int((end.Sub(now)+time.Second-1)/time.Second), 1)
}

// publicLimit is the limit of the public routes for the visitor of r:
// Config.PublicRateLimit (120) requests a minute per IP address (an IPv6 visitor's /64, which one
// machine holds whole), on every browser SDK route and ping.
func (a *API) publicLimit(r *request) store.RateLimit {
	return a.ipLimit(r, "public", time.Minute, a.cfg.PublicRateLimit)
}

// ipLimit is a limit of name counted per visitor address (an IPv6
// visitor's /64, which one machine holds whole).
func (a *API) ipLimit(r *request, name string, window time.Duration, limit int) store.RateLimit {
	ip := a.visitorIP(r)
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return store.RateLimit{Key: name + ":ip:" + p.String(), Window: window, Max: int64(limit)}
		}
	}
	return store.RateLimit{Key: name + ":ip:" + ip.String(), Window: window, Max: int64(limit)}
}

// takePublic counts a public route's request against its visitor's limit
// (package ratelimit: shared by every node, no store round trip) and sets
// the RateLimit-* headers; over it, 429 rate_limited with Retry-After.
func (a *API) takePublic(r *request) error {
	if a.cfg.PublicRateLimit < 0 {
		return nil
	}
	return a.takeShared(r, a.publicLimit(r), "this address may call the browser SDK routes %d times a minute")
}

// takeShared counts a request against l through the shared in-memory
// counters (package ratelimit) and sets the RateLimit-* headers; over it,
// 429 rate_limited with Retry-After and message (which takes l.Max).
func (a *API) takeShared(r *request, l store.RateLimit, message string) error {
	used, ok := a.public.Take(l, r.now)
	setRateLimitHeaders(r, l, used)
	if ok {
		return nil
	}
	r.fc.Response.Header.Set("Retry-After", strconv.Itoa(secondsUntil(r.now, l.WindowEnd(r.now))))
	return errorf(CodeRateLimited, message, l.Max)
}
