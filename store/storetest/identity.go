package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var identityCases = []testCase{
	{"Default", testIdentityDefault},
	{"Update", testIdentityUpdate},
	{"Refused", testIdentityRefused},
	{"Concurrent", testIdentityConcurrent},
}

func testIdentityDefault(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	got, err := s.IdentityVerification(ctx, w.Website.ID)
	noErr(t, "IdentityVerification", err)
	same(t, "a new website's identity verification", got, store.IdentityVerification{Mode: store.IdentityOff})

	_, err = s.IdentityVerification(ctx, uuid.NewString())
	wantErr(t, "IdentityVerification of an unknown website", err, store.ErrNotFound)
	called := false
	_, err = s.UpdateIdentityVerification(ctx, uuid.NewString(), func(*store.IdentityVerification) error {
		called = true
		return nil
	})
	wantErr(t, "UpdateIdentityVerification of an unknown website", err, store.ErrNotFound)
	if called {
		t.Error("change called for an unknown website")
	}
}

func testIdentityUpdate(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	update := func(what string, change func(*store.IdentityVerification)) store.IdentityVerification {
		t.Helper()
		got, err := s.UpdateIdentityVerification(ctx, w.Website.ID, func(iv *store.IdentityVerification) error {
			change(iv)
			return nil
		})
		noErr(t, what, err)
		stored, err := s.IdentityVerification(ctx, w.Website.ID)
		noErr(t, what+": IdentityVerification", err)
		same(t, what+": stored", stored, got)
		return got
	}

	// A secret without id or time gets both; the mode changes with it.
	before := time.Now().Add(-time.Second)
	got := update("first secret", func(iv *store.IdentityVerification) {
		iv.Mode = store.IdentityReport
		iv.Secrets = append(iv.Secrets, store.IdentitySecret{Secret: "rbid_first"})
	})
	if len(got.Secrets) != 1 || uuid.Validate(got.Secrets[0].ID) != nil || got.Secrets[0].CreatedAt.Before(before) ||
		got.Secrets[0].CreatedAt.After(time.Now().Add(time.Second)) {
		t.Fatalf("first secret %+v", got)
	}
	first := got.Secrets[0]
	same(t, "after the first secret", got, store.IdentityVerification{Mode: store.IdentityReport, Secrets: []store.IdentitySecret{first}})

	// A second one with its own id and time comes after it (oldest first);
	// an edit of the stored one is not written.
	second := store.IdentitySecret{ID: uuid.NewString(), Secret: "rbid_second", CreatedAt: time.Now().Add(time.Hour).Truncate(time.Millisecond)}
	got = update("second secret", func(iv *store.IdentityVerification) {
		iv.Mode = store.IdentityEnforce
		iv.Secrets[0].Secret = "rbid_edited"
		iv.Secrets = append(iv.Secrets, second)
	})
	same(t, "two secrets", got, store.IdentityVerification{Mode: store.IdentityEnforce, Secrets: []store.IdentitySecret{first, second}})

	// Rotation: the old one goes, a third comes; then the mode alone.
	got = update("rotation", func(iv *store.IdentityVerification) {
		iv.Secrets = append(iv.Secrets[1:], store.IdentitySecret{Secret: "rbid_third", CreatedAt: second.CreatedAt.Add(time.Hour)})
	})
	if len(got.Secrets) != 2 || got.Secrets[1].Secret != "rbid_third" || !got.Secrets[1].CreatedAt.Equal(second.CreatedAt.Add(time.Hour)) {
		t.Fatalf("after rotation %+v", got)
	}
	third := got.Secrets[1]
	same(t, "after rotation", got, store.IdentityVerification{Mode: store.IdentityEnforce, Secrets: []store.IdentitySecret{second, third}})
	got = update("mode off", func(iv *store.IdentityVerification) { iv.Mode = store.IdentityOff })
	same(t, "off, secrets kept", got, store.IdentityVerification{Mode: store.IdentityOff, Secrets: []store.IdentitySecret{second, third}})
	got = update("every secret removed", func(iv *store.IdentityVerification) { iv.Secrets = nil })
	same(t, "no secret", got, store.IdentityVerification{Mode: store.IdentityOff})

	// The other website saw none of it.
	untouched, err := s.IdentityVerification(ctx, other.Website.ID)
	noErr(t, "IdentityVerification (other)", err)
	same(t, "other website", untouched, store.IdentityVerification{Mode: store.IdentityOff})
}

func testIdentityRefused(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	want, err := s.UpdateIdentityVerification(ctx, w.Website.ID, func(iv *store.IdentityVerification) error {
		iv.Mode = store.IdentityEnforce
		iv.Secrets = []store.IdentitySecret{{Secret: "rbid_one", CreatedAt: at(time.Second)}}
		return nil
	})
	noErr(t, "UpdateIdentityVerification", err)
	unchanged := func(what string) {
		t.Helper()
		got, err := s.IdentityVerification(ctx, w.Website.ID)
		noErr(t, what+": IdentityVerification", err)
		same(t, what+": nothing changed", got, want)
	}

	refuse := errors.New("refused")
	_, err = s.UpdateIdentityVerification(ctx, w.Website.ID, func(iv *store.IdentityVerification) error {
		iv.Mode = store.IdentityOff
		iv.Secrets = nil
		return refuse
	})
	wantErr(t, "change's error", err, refuse)
	unchanged("change's error")

	_, err = s.UpdateIdentityVerification(ctx, w.Website.ID, func(iv *store.IdentityVerification) error {
		iv.Secrets = append(iv.Secrets, store.IdentitySecret{Secret: "rbid_two"}, store.IdentitySecret{Secret: "rbid_three"})
		return nil
	})
	wantErr(t, "a third secret", err, store.ErrConflict)
	unchanged("a third secret")

	_, err = s.UpdateIdentityVerification(ctx, w.Website.ID, func(iv *store.IdentityVerification) error {
		iv.Secrets = append(iv.Secrets, store.IdentitySecret{ID: iv.Secrets[0].ID, Secret: "rbid_same_id"})
		return nil
	})
	wantErr(t, "two secrets with one id", err, store.ErrConflict)
	unchanged("two secrets with one id")

	_, err = s.UpdateIdentityVerification(ctx, w.Website.ID, func(iv *store.IdentityVerification) error {
		iv.Mode = "strict"
		iv.Secrets = nil
		return nil
	})
	if err == nil {
		t.Fatal("an unknown mode was stored")
	}
	unchanged("an unknown mode")
}

// testIdentityConcurrent: updates of one website run one after the other,
// each seeing the secrets the last one stored, so callers that each add a
// secret when there is room never store more than MaxIdentitySecrets.
func testIdentityConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	full := errors.New("full")
	const callers = 8
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		added int
	)
	for i := range callers {
		wg.Go(func() {
			_, err := s.UpdateIdentityVerification(ctx, w.Website.ID, func(iv *store.IdentityVerification) error {
				if len(iv.Secrets) >= store.MaxIdentitySecrets {
					return full
				}
				// Hold the state read a while, so that calls would overlap
				// if the store did not serialise them.
				time.Sleep(20 * time.Millisecond)
				iv.Secrets = append(iv.Secrets, store.IdentitySecret{Secret: "rbid_" + string(rune('a'+i))})
				return nil
			})
			switch {
			case err == nil:
				mu.Lock()
				added++
				mu.Unlock()
			case !errors.Is(err, full):
				t.Errorf("caller %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	got, err := s.IdentityVerification(ctx, w.Website.ID)
	noErr(t, "IdentityVerification", err)
	if added != store.MaxIdentitySecrets || len(got.Secrets) != store.MaxIdentitySecrets {
		t.Fatalf("%d callers added a secret, %d stored; want %d", added, len(got.Secrets), store.MaxIdentitySecrets)
	}
}
