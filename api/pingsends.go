package api

import (
	"context"
	"sync"

	"github.com/relaybell/relaybell/store"
)

// pingSendsMax bounds the sends pingSends keeps; past it, it starts over.
const pingSendsMax = 4096

// pingSends keeps what the delivered and clicked pings read of a send: a
// broadcast's receipts, one a browser, all read the same row. It keeps a
// send only once nothing a ping reads of it can change (final); until
// then each ping reads it from the store.
type pingSends struct {
	mu    sync.Mutex
	sends map[string]store.Notification // by id, as pingView keeps them
}

// notification is the website's send id, from the cache or the store.
func (c *pingSends) notification(ctx context.Context, st interface {
	Notification(ctx context.Context, websiteID, id string) (store.Notification, error)
}, websiteID, id string) (store.Notification, error) {
	c.mu.Lock()
	n, ok := c.sends[id]
	c.mu.Unlock()
	if ok && n.WebsiteID == websiteID {
		return n, nil
	}
	n, err := st.Notification(ctx, websiteID, id)
	if err != nil || !final(n) {
		return n, err
	}
	n = pingView(n)
	c.mu.Lock()
	if c.sends == nil || len(c.sends) >= pingSendsMax {
		c.sends = make(map[string]store.Notification)
	}
	c.sends[id] = n
	c.mu.Unlock()
	return n, nil
}

// final reports whether what a ping reads of n (pingView) can no longer
// change: it went out (a draft or a scheduled send can be edited, even
// into an A/B test), and an A/B test's winner, which decides the variant
// of the rest of its audience, is set. A test that has no winner to
// decide is read from the store every time.
func final(n store.Notification) bool {
	if n.Status != store.StatusSending && n.Status != store.StatusSent {
		return false
	}
	return !n.AB || n.ABWinner != ""
}

// pingView is what a ping reads of n: whose it is, whether it is an A/B
// test and, then, its content and winner (variantOf), and the journey
// that sent it.
func pingView(n store.Notification) store.Notification {
	v := store.Notification{ID: n.ID, WebsiteID: n.WebsiteID, Status: n.Status, AB: n.AB, ABWinner: n.ABWinner, JourneyID: n.JourneyID}
	if n.AB {
		v.Content = n.Content
	}
	return v
}
