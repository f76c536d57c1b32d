package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

// testSearchNotifications checks ListQuery.Q: a case-insensitive search of
// titles and bodies that folds any Unicode text the same way on every
// engine, whatever the database's locale (store.FoldSearch).
func testSearchNotifications(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	made := map[string]string{} // id: name
	add := func(name, title, body string) store.Notification {
		t.Helper()
		n := notification(w.Website.ID)
		n.Title, n.Body, n.CreatedAt = title, body, at(time.Duration(len(made))*time.Minute)
		n = create(t, s, n)
		made[n.ID] = name
		return n
	}
	add("sale", "Über sale", "Everything must go")
	add("news", "News", "über uns")
	add("street", "Straße fest", "Bring a chair")
	add("greek", "ΟΔΟΣ", "Σίσυφος")
	add("cafe", "Cafe\u0301 open", "") // é as e and a combining acute (NFD)
	add("split", "Flash", "Deal")
	add("lines", "Two", "lines\nof text")
	add("mangled", "Bad \uFFFD byte", "") // what a JSON decoder makes of an invalid byte
	add("other", "Winter", "Coats")

	// find lists the names of what q finds among the given statuses,
	// newest first; each mismatch is reported, and the test goes on.
	find := func(statuses []string, q string, want ...string) {
		t.Helper()
		got, err := s.ListNotifications(ctx, store.ListQuery{WebsiteID: w.Website.ID, Q: q, Statuses: statuses})
		if err != nil {
			t.Errorf("ListNotifications(q=%q): %v", q, err)
			return
		}
		names := make([]string, len(got))
		for i, n := range got {
			names[i] = made[n.ID]
		}
		if !slices.Equal(names, want) {
			t.Errorf("q=%q found %q, want %q", q, names, want)
		}
	}
	f := func(q string, want ...string) { t.Helper(); find(nil, q, want...) }
	f("über", "news", "sale")
	f("ÜBER", "news", "sale")
	f("Über SALE", "sale")
	f("UNS", "news")       // body only
	f("must go", "sale")   // body only
	f("STRASSE", "street") // ß folds to ss
	f("strasse fest", "street")
	f("STRAẞE", "street") // capital sharp s
	f("οδος", "greek")    // final sigma, sigma and capital sigma fold alike
	f("ΣΊΣΥΦΟΣ", "greek")
	f("CAFÉ", "cafe") // é precomposed (NFC) finds its decomposed form
	f("café open", "cafe")
	f("flash", "split")
	f("deal", "split")
	f("flashdeal")   // never across title and body
	f("flash deal")  //
	f("flash\ndeal") //
	f("flash\uFFFFdeal")
	f("lines\nOF", "lines")
	f("summer")
	f("bad \uFFFD", "mangled")
	// Text no column can hold answers without error: an invalid byte reads
	// as U+FFFD, as the JSON decoder reads it in a title; so does NUL.
	f("bad \xff", "mangled")
	f("\xc3", "mangled")
	f("bad \x00", "mangled")
	f("über\x00")
	f("\xed\xa0\x80sale") // a UTF-16 surrogate half, encoded
	f("\x00", "mangled")
	f("", "other", "mangled", "lines", "split", "cafe", "greek", "street", "news", "sale")

	// Every write of a title or body makes it searchable: editing a draft.
	draft := notification(w.Website.ID)
	draft.Status, draft.Title, draft.Body = store.StatusDraft, "Draft", "Plain"
	draft = create(t, s, draft)
	made[draft.ID] = "draft"
	drafts := func(q string, want ...string) {
		t.Helper()
		find([]string{store.StatusDraft, store.StatusScheduled}, q, want...)
	}
	drafts("PLAIN", "draft")
	draft.Title, draft.Body = "Ärger", "GROẞ"
	noErr(t, "ReplaceDraft", s.ReplaceDraft(ctx, &draft))
	drafts("plain")
	drafts("ärger", "draft")
	drafts("gross", "draft")
	draft.Status, draft.ScheduledAt, draft.Title = store.StatusScheduled, ptr(at(time.Hour)), "Öl"
	noErr(t, "ReplaceDraft(send)", s.ReplaceDraft(ctx, &draft))
	drafts("ärger")
	drafts("ÖL", "draft")
}
