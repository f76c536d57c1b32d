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

// watchAuth polls the auth version every interval until Close.
func (a *API) watchAuth(interval time.Duration) {
	defer close(a.watchDone)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var failing time.Time // first failure of the current run of them
	for {
		select {
		case <-a.base.Done():
			return
		case <-tick.C:
		}
		_, err := a.readAuthVersion(a.base)
		switch {
		case err == nil && !failing.IsZero():
			a.log.Info("auth version readable again; key cache trusted", "failing_for", time.Since(failing).Round(time.Millisecond))
			failing = time.Time{}
		case err != nil && a.base.Err() != nil:
			return
		case err != nil && failing.IsZero():
			failing = time.Now()
			a.log.Warn("reading auth version; retrying, and answering keys from the store after "+a.keys.trustFor.String(), "err", err)
		}
	}
}

// startAuthWatch reads the auth version once, so the cache is trusted from
// the first request, and starts the poller. A failed first read is logged:
// the cache is not used until a poll succeeds.
func (a *API) startAuthWatch() {
	a.watchDone = make(chan struct{})
	if a.cfg.AuthPoll < 0 {
		close(a.watchDone)
		return
	}
	a.keys.trustFor = authTrust(a.cfg.AuthPoll)
	if _, err := a.readAuthVersion(a.base); err != nil && !errors.Is(err, context.Canceled) {
		a.log.Warn("reading auth version; key cache unused until it is read", "err", err)
	}
	go a.watchAuth(a.cfg.AuthPoll)
}
