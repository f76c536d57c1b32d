package api

import (
	"context"
	"errors"
	"time"
)

// The key cache across nodes.
//
// Each API node caches what API keys resolve to (keyCache). A change to
// that made through one node (an account suspended, reinstated or
// verified, a website's settings, a key created, and key revocation once
// it exists) must hold on every node within about a second, in the
// embedded mode and in a cluster alike. The store keeps an auth version
// (store.Store.AuthVersion) that its triggers move in the same transaction
// as any such change; every node reads it every Config.AuthPoll and drops
// its cache when it moved. A store method that changes accounts, websites
// or api_keys (RevokeAPIKey included) does nothing for this: the version
// moves by itself. The node that made a change also purges its cache at
// once, so it never serves the old answer even for one poll.
//
// Why it is enough: a node that read version v and then looks a key up
// reads every change up to v; a later change moves the version, the next
// poll reads it and purges; and a lookup that read the store before that
// purge does not put its answer back (keyCache's generations). Why a
// version and not LISTEN/NOTIFY: one code path for SQLite and PostgreSQL,
// no connection held per node, and a missed notification is impossible by
// construction (a read either sees the new version or the old one).
//
// A node that cannot read the version for trustFor (4 polls, at least a
// second) answers every key from the store until it reads it again; the
// poll is retried every AuthPoll and its first failure and its recovery
// are logged.

// authTrust is how long after its last successful poll a node still serves
// cached keys: 4 polls, at least a second.
func authTrust(poll time.Duration) time.Duration {
	return max(4*poll, time.Second)
}

// readAuthVersion reads the store's auth version once and purges the key
// cache when it moved. It reports whether it did.
func (a *API) readAuthVersion(ctx context.Context) (changed bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, authTrust(a.cfg.AuthPoll))
	defer cancel()
	start := a.now()
	v, err := a.st.AuthVersion(ctx)
	if err != nil {
		a.metrics.authPolls.WithLabelValues("error").Inc()
		return false, err
	}
	if changed = a.keys.observe(v, start); changed {
		a.metrics.authPolls.WithLabelValues("changed").Inc()
	} else {
		a.metrics.authPolls.WithLabelValues("unchanged").Inc()
	}
	return changed, nil
}

// WatchAuth polls the auth version every Config.AuthPoll until ctx ends
// (at once when polling is off). The composition root runs it beside the
// API, as a module.
func (a *API) WatchAuth(ctx context.Context) error {
	if a.cfg.AuthPoll < 0 {
		return nil
	}
	tick := time.NewTicker(a.cfg.AuthPoll)
	defer tick.Stop()
	var failing time.Time // first failure of the current run of them
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		_, err := a.readAuthVersion(ctx)
		switch {
		case err == nil && !failing.IsZero():
			a.log.Info("auth version readable again; key cache trusted", "failing_for", time.Since(failing).Round(time.Millisecond))
			failing = time.Time{}
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil && failing.IsZero():
			failing = time.Now()
			a.log.Warn("reading auth version; retrying, and answering keys from the store after "+a.keys.trustFor.String(), "err", err)
		}
	}
}

// readAuthFirst reads the auth version once, so the cache is trusted from
// the first request. A failed first read is logged: the cache is not used
// until a poll succeeds.
func (a *API) readAuthFirst() {
	if a.cfg.AuthPoll < 0 {
		return
	}
	a.keys.trustFor = authTrust(a.cfg.AuthPoll)
	if _, err := a.readAuthVersion(a.base); err != nil && !errors.Is(err, context.Canceled) {
		a.log.Warn("reading auth version; key cache unused until it is read", "err", err)
	}
}
