package defcache_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/audience"
	"github.com/relaybell/relaybell/defcache"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/postgres"
	"github.com/relaybell/relaybell/store/postgres/pgtest"
	"github.com/relaybell/relaybell/store/sqlite"
)

// onEngines runs test over a new store of each engine (PostgreSQL: a
// schema of its own; skipped under -short when it is unreachable), with a
// website.
func onEngines(t *testing.T, test func(t *testing.T, st store.Store, site string)) {
	ctx := context.Background()
	open := map[string]func(t *testing.T) (store.Store, error){
		"sqlite": func(t *testing.T) (store.Store, error) {
			return sqlite.Open(ctx, filepath.Join(t.TempDir(), "relaybell.db"), nil)
		},
		"postgres": func(t *testing.T) (store.Store, error) {
			return postgres.Open(ctx, pgtest.DSN(t), nil)
		},
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			st, err := open[engine](t)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			id := uuid.NewString()
			now := time.Now().UTC()
			if err := st.CreateWebsite(ctx, store.Account{ID: uuid.NewString(), OwnerEmail: id[:8] + "@example.com", CreatedAt: now},
				store.Website{ID: id, ProjectID: "prj_" + id[:8], Name: "Site", URL: "https://example.com", Timezone: "UTC",
					VAPIDPublicKey: "pub" + id, VAPIDPrivateKey: "priv" + id, CreatedAt: now}, store.APIKey{}); err != nil {
				t.Fatal(err)
			}
			test(t, st, id)
		})
	}
}

// expire makes the cache read the version at its next answer, as it does
// once its TTL passed (it keeps its answers unless the version moved).
func expire(c *defcache.Store) { defcache.Expire(c) }

// nodes are two caches over one store, each trusting its version an hour:
// node a's API made a change (and purged a), node b sees it at its next
// version check, not before.
type nodes struct {
	t    *testing.T
	a, b *defcache.Store
}

func newNodes(t *testing.T, st store.Store) nodes {
	return nodes{t: t, a: defcache.New(st, time.Hour, nil), b: defcache.New(st, time.Hour, nil)}
}

// changed runs change through the store as node a's API would (it purges
// a after the write), and checks what read answers: the old on node b
// until its next check, the new after it, and the new on a at once.
func (n nodes) changed(what string, change func(), read func(c *defcache.Store) string, old, new string) {
	n.t.Helper()
	for _, c := range []*defcache.Store{n.a, n.b} {
		if got := read(c); got != old {
			n.t.Fatalf("%s: before, %q, want %q", what, got, old)
		}
	}
	change()
	n.a.Purge()
	if got := read(n.a); got != new {
		n.t.Fatalf("%s: the node it was made through answers %q, want %q", what, got, new)
	}
	if got := read(n.b); got != old {
		n.t.Fatalf("%s: another node answers %q before its version check, want the cached %q", what, got, old)
	}
	expire(n.b)
	if got := read(n.b); got != new {
		n.t.Fatalf("%s: another node answers %q after its version check, want %q", what, got, new)
	}
}

// TestSiteSettingsCached: a change to a settings document, or the
// website's deletion, is seen by a warm cache at its next version check.
func TestSiteSettingsCached(t *testing.T) {
	onEngines(t, func(t *testing.T, st store.Store, site string) {
		ctx := context.Background()
		n := newNodes(t, st)
		read := func(name string) func(c *defcache.Store) string {
			return func(c *defcache.Store) string {
				b, err := c.SiteSettings(ctx, site, name)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
		}
		put := func(name, body string) func() {
			return func() {
				if err := st.PutSiteSettings(ctx, site, name, []byte(body), time.Now()); err != nil {
					t.Fatal(err)
				}
			}
		}
		n.changed("the prompt set", put(store.SettingsPrompt, `{"enabled":true}`), read(store.SettingsPrompt), "", `{"enabled":true}`)
		n.changed("the welcome set", put(store.SettingsWelcome, `{"enabled":true}`), read(store.SettingsWelcome), "", `{"enabled":true}`)
		n.changed("the welcome changed", put(store.SettingsWelcome, `{"enabled":false}`), read(store.SettingsWelcome),
			`{"enabled":true}`, `{"enabled":false}`)
		n.changed("the website deleted", func() {
			if err := st.DeleteWebsite(ctx, site); err != nil {
				t.Fatal(err)
			}
		}, read(store.SettingsPrompt), `{"enabled":true}`, "")
	})
}

// TestOnsiteMessagesCached: a message created, paused, made active again
// or deleted is seen by a warm cache at its next version check; only the
// active ones are answered, oldest first.
func TestOnsiteMessagesCached(t *testing.T) {
	onEngines(t, func(t *testing.T, st store.Store, site string) {
		ctx := context.Background()
		n := newNodes(t, st)
		read := func(c *defcache.Store) string {
			list, err := c.ActiveOnsiteMessages(ctx, site)
			if err != nil {
				t.Fatal(err)
			}
			out := ""
			for _, m := range list {
				out += m.Title + ";"
			}
			return out
		}
		at := time.Now().UTC().Truncate(time.Millisecond)
		msg := func(title, status string, created time.Time) store.OnsiteMessage {
			return store.OnsiteMessage{ID: uuid.NewString(), WebsiteID: site, Name: title, Status: status,
				Definition: []byte(`{"name":"` + title + `","title":"` + title + `","status":"` + status + `"}`),
				CreatedAt:  created, UpdatedAt: created}
		}
		a, b := msg("A", "active", at), msg("B", "active", at.Add(time.Second))
		create := func(m store.OnsiteMessage) func() {
			return func() {
				if err := st.CreateOnsiteMessage(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
		}
		update := func(m store.OnsiteMessage, status string) func() {
			return func() {
				m.Status, m.Definition = status, []byte(`{"name":"`+m.Name+`","title":"`+m.Name+`","status":"`+status+`"}`)
				if err := st.UpdateOnsiteMessage(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
		}
		n.changed("a message created", create(a), read, "", "A;")
		n.changed("another created", create(b), read, "A;", "A;B;")
		n.changed("a draft created", create(msg("C", "draft", at.Add(2*time.Second))), read, "A;B;", "A;B;")
		n.changed("a message paused", update(a, "paused"), read, "A;B;", "B;")
		n.changed("active again", update(a, "active"), read, "B;", "A;B;")
		n.changed("a message deleted", func() {
			if err := st.DeleteOnsiteMessage(ctx, site, a.ID); err != nil {
				t.Fatal(err)
			}
		}, read, "A;B;", "B;")
		// A count is no definition: the cache stays.
		if err := st.CountOnsite(ctx, site, b.ID, store.OnsiteImpression, 1); err != nil {
			t.Fatal(err)
		}
		v, err := st.DefinitionsVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cached := defcache.CachedVersion(n.b); cached != v {
			t.Fatalf("a count moved the definitions version: %d, cached at %d", v, cached)
		}
	})
}

// TestSegmentSelectorCached: a segment's compiled filters follow its
// change at the next version check; a missing segment is
// audience.ErrSegmentMissing until it exists.
func TestSegmentSelectorCached(t *testing.T) {
	onEngines(t, func(t *testing.T, st store.Store, site string) {
		ctx := context.Background()
		n := newNodes(t, st)
		segID := uuid.NewString()
		fr := store.Subscriber{Language: "fr"}
		read := func(c *defcache.Store) string {
			sel, err := c.SegmentSelector(ctx, site, segID)
			if errors.Is(err, audience.ErrSegmentMissing) {
				return "missing"
			} else if err != nil {
				t.Fatal(err)
			}
			if sel.Selects(&fr) {
				return "selects"
			}
			return "not"
		}
		seg := store.Segment{ID: segID, WebsiteID: site, Name: "French",
			Filters: []byte(`{"rules":[{"field":"language","value":"fr"}]}`), CreatedAt: time.Now().UTC()}
		n.changed("a segment created", func() {
			if err := st.CreateSegment(ctx, seg); err != nil {
				t.Fatal(err)
			}
		}, read, "missing", "selects")
		n.changed("a segment changed", func() {
			seg.Filters = []byte(`{"rules":[{"field":"language","value":"de"}]}`)
			if err := st.UpdateSegment(ctx, seg); err != nil {
				t.Fatal(err)
			}
		}, read, "selects", "not")
	})
}

// TestTopicsCached: a topic created, renamed or deleted is seen by a warm
// cache at its next version check; an opt-in is no definition.
func TestTopicsCached(t *testing.T) {
	onEngines(t, func(t *testing.T, st store.Store, site string) {
		ctx := context.Background()
		n := newNodes(t, st)
		read := func(c *defcache.Store) string {
			list, err := c.Topics(ctx, site)
			if err != nil {
				t.Fatal(err)
			}
			out := ""
			for _, tp := range list {
				out += tp.Slug + "=" + tp.Name + ";"
			}
			return out
		}
		var id string
		n.changed("a topic created", func() {
			tp, _, err := st.SaveTopic(ctx, store.Topic{ID: uuid.NewString(), WebsiteID: site, Name: "News", Slug: "news", CreatedAt: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			id = tp.ID
		}, read, "", "news=News;")
		n.changed("a topic renamed", func() {
			if _, err := st.RenameTopic(ctx, site, id, "Daily news"); err != nil {
				t.Fatal(err)
			}
		}, read, "news=News;", "news=Daily news;")
		n.changed("a topic deleted", func() {
			if err := st.DeleteTopic(ctx, site, id); err != nil {
				t.Fatal(err)
			}
		}, read, "news=Daily news;", "")
	})
}
