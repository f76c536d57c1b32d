package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/storetest"
)

// A browser registering again as before (the SDK does on every page view)
// writes its endpoint's, its subscriber's and its visit's pages, and no
// index's: the columns in one (the device, the country, the language) are
// set only where they change, so SQLite does not delete and insert their
// entries again. One by one and in a batch; a new device is still written,
// to its index too.
func TestRegistrationAgainWritesNoIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "relaybell.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.BenchSetup(t, s)
	reg := func(i int) store.SubscriptionInput {
		n := strconv.Itoa(i)
		in := store.SubscriptionInput{WebsiteID: storetest.BenchWebsite, Endpoint: "https://push.example/" + n,
			P256dh: "BP256-" + n, Auth: "auth-" + n, Language: "fr", Timezone: "Europe/Paris", Country: "FR",
			UserAgent: "Chrome/124", Device: "desktop", URL: "https://example.com/", Visit: store.VisitWeight,
			SiteTimezone: "UTC", At: time.Now()}
		if i%2 == 0 {
			in.ExternalID = "u-" + n
		}
		return in
	}
	var all []store.SubscriptionInput
	for i := range 400 {
		all = append(all, reg(i))
	}
	if _, err := s.UpsertSubscriptions(ctx, all); err != nil {
		t.Fatal(err)
	}

	// written is the tables and indexes whose pages the last transaction
	// in the log wrote.
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	written := func() []string {
		t.Helper()
		names := map[uint32]string{}
		rows, err := raw.Query(`SELECT name, pageno FROM dbstat`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name string
			var page uint32
			if err := rows.Scan(&name, &page); err != nil {
				t.Fatal(err)
			}
			names[page] = name
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		return lastCommit(t, path+"-wal", names)
	}
	again := func(i int, change func(*store.SubscriptionInput)) store.SubscriptionInput {
		in := reg(i)
		in.At = time.Now()
		if change != nil {
			change(&in)
		}
		return in
	}
	// indexes is which of what was written are indexes.
	indexes := func(written []string) []string {
		var out []string
		for _, name := range written {
			var n int
			if err := raw.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = ?`, name).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				out = append(out, name)
			}
		}
		return out
	}

	if _, err := s.UpsertSubscription(ctx, again(10, nil)); err != nil {
		t.Fatal(err)
	}
	if got := written(); len(indexes(got)) > 0 || !slices.Contains(got, "endpoints") {
		t.Errorf("a browser registering again wrote pages of %v; want its rows' and no index's", got)
	}
	if _, err := s.UpsertSubscriptions(ctx, []store.SubscriptionInput{again(20, nil), again(31, nil)}); err != nil {
		t.Fatal(err)
	}
	if got := written(); len(indexes(got)) > 0 || !slices.Contains(got, "endpoints") {
		t.Errorf("two browsers registering again in a batch wrote pages of %v; want their rows' and no index's", got)
	}

	// A change is written, and its index with it.
	phone := func(in *store.SubscriptionInput) { in.Device, in.Country = "android", "BE" }
	want := []string{"endpoints_device", "subscribers_country"}
	if _, err := s.UpsertSubscription(ctx, again(12, phone)); err != nil {
		t.Fatal(err)
	}
	if got := indexes(written()); !slices.Equal(got, want) {
		t.Errorf("a browser registering again from a phone in Belgium wrote pages of the indexes %v, want %v", got, want)
	}
	if _, err := s.UpsertSubscriptions(ctx, []store.SubscriptionInput{again(22, phone), again(33, phone)}); err != nil {
		t.Fatal(err)
	}
	if got := indexes(written()); !slices.Equal(got, want) {
		t.Errorf("two browsers registering again from phones in Belgium in a batch wrote pages of the indexes %v, want %v", got, want)
	}
	var device, country string
	if err := raw.QueryRow(`SELECT e.device, s.country FROM endpoints e JOIN subscribers s ON s.id = e.subscriber_id
		WHERE e.url = 'https://push.example/33'`).Scan(&device, &country); err != nil || device != "android" || country != "BE" {
		t.Fatalf("the browser registered again from a phone: device %q, country %q (%v); want android, BE", device, country, err)
	}
}

// lastCommit reads the write-ahead log at path and returns the names
// (names: by page number) of the pages its last transaction wrote, sorted,
// each once. A frame is the log's while its salts are the header's: the
// frames after them are left from before the log started again.
func lastCommit(t *testing.T, path string, names map[uint32]string) []string {
	t.Helper()
	const header, frameHeader = 32, 24
	log, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) < header {
		t.Fatalf("the log is %d bytes", len(log))
	}
	pageSize := int(binary.BigEndian.Uint32(log[8:]))
	salts := string(log[16:24])
	var last, current map[string]bool
	for off := header; off+frameHeader+pageSize <= len(log); off += frameHeader + pageSize {
		frame := log[off : off+frameHeader]
		if string(frame[8:16]) != salts {
			break
		}
		if current == nil {
			current = map[string]bool{}
		}
		name, ok := names[binary.BigEndian.Uint32(frame)]
		if !ok {
			name = "page " + strconv.Itoa(int(binary.BigEndian.Uint32(frame)))
		}
		current[name] = true
		if binary.BigEndian.Uint32(frame[4:]) != 0 { // a commit's last frame
			last, current = current, nil
		}
	}
	if last == nil {
		t.Fatal("no transaction in the log")
	}
	return slices.Sorted(maps.Keys(last))
}
