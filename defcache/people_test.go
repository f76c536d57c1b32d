package defcache

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

// fakePeople is a people store that records its calls.
type fakePeople struct {
	refs    map[string]store.PersonRef // by key, one website
	version int64
	fail    bool     // PeopleVersion fails
	reads   []string // the keys PersonRefs read, every call's together
	vreads  int
}

func (f *fakePeople) PersonRefs(_ context.Context, _ string, keys []string) (map[string]store.PersonRef, error) {
	f.reads = append(f.reads, keys...)
	out := map[string]store.PersonRef{}
	for _, k := range keys {
		if r, ok := f.refs[k]; ok {
			out[k] = r
		}
	}
	return out, nil
}

func (f *fakePeople) PeopleVersion(context.Context) (int64, error) {
	f.vreads++
	if f.fail {
		return 0, errors.New("down")
	}
	return f.version, nil
}

// People reads the version on every call, the keys that named somebody
// once while it holds, every key again once it moved, and keys naming
// nobody every time; without a version it reads the store and keeps
// nothing.
func TestPeople(t *testing.T) {
	ctx := context.Background()
	ann := store.PersonRef{ID: "s-1", ExternalID: "ann"}
	f := &fakePeople{refs: map[string]store.PersonRef{"ann": ann, "s-1": ann}, version: 1}
	p := NewPeople(f, nil)
	look := func(want map[string]store.PersonRef, wantReads ...string) {
		t.Helper()
		f.reads = nil
		vreads := f.vreads
		got, err := p.Refs(ctx, map[string][]string{"w": {"ann", "s-1", "nobody"}})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(f.reads)
		if !reflect.DeepEqual(got["w"], want) || !slices.Equal(f.reads, wantReads) || f.vreads != vreads+1 {
			t.Fatalf("got %v reading %v (%d version reads), want %v reading %v (1)", got["w"], f.reads, f.vreads-vreads, want, wantReads)
		}
	}
	both := map[string]store.PersonRef{"ann": ann, "s-1": ann}
	look(both, "ann", "nobody", "s-1")
	look(both, "nobody")

	// ann erased: the version moved.
	f.refs, f.version = map[string]store.PersonRef{}, 2
	look(map[string]store.PersonRef{}, "ann", "nobody", "s-1")

	f.refs = map[string]store.PersonRef{"ann": ann, "s-1": ann}
	f.fail = true
	look(both, "ann", "nobody", "s-1")
	look(both, "ann", "nobody", "s-1")
	f.fail = false
	look(both, "ann", "nobody", "s-1") // the first read after a failure trusts nothing kept
	look(both, "nobody")
}

// leasedPeople is a fakePeople whose every change waits out a lease.
type leasedPeople struct {
	*fakePeople
	lease time.Duration
}

func (l leasedPeople) PeopleLease() time.Duration { return l.lease }

// Over a store that leases the version, People reads it once for the
// lease's length, whatever the lookups meanwhile, then again; over one
// that does not, once a call.
func TestPeopleLease(t *testing.T) {
	ctx := context.Background()
	ann := store.PersonRef{ID: "s-1", ExternalID: "ann"}
	for _, c := range []struct {
		lease time.Duration
		want  int
	}{{time.Hour, 1}, {0, 3}} {
		f := &fakePeople{refs: map[string]store.PersonRef{"ann": ann}, version: 1}
		var base PeopleBase = f
		if c.lease > 0 {
			base = leasedPeople{f, c.lease}
		}
		p := NewPeople(base, nil)
		for range 3 {
			got, err := p.Refs(ctx, map[string][]string{"w": {"ann"}})
			if err != nil || got["w"]["ann"] != ann {
				t.Fatalf("lease %s: %v, %v", c.lease, got, err)
			}
		}
		if f.vreads != c.want || len(f.reads) != 1 {
			t.Errorf("lease %s: %d version reads and %d key reads for three lookups, want %d and 1", c.lease, f.vreads, len(f.reads), c.want)
		}
	}
	// Once the lease ran out, the version is read again.
	f := &fakePeople{refs: map[string]store.PersonRef{"ann": ann}, version: 1}
	p := NewPeople(leasedPeople{f, time.Millisecond}, nil)
	for range 2 {
		if _, err := p.Refs(ctx, map[string][]string{"w": {"ann"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if f.vreads != 2 {
		t.Errorf("%d version reads for two lookups a lease apart, want 2", f.vreads)
	}
}
