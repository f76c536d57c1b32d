// Package storetest is the conformance suite every store.Store
// implementation runs (SQLite in the embedded mode, PostgreSQL in the
// cluster), so that what the API shows is the same in both. It uses only the
// store.Store interface.
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store"
)

// Run runs the suite. open is called once per subtest and must return a new,
// empty store whose Close it registers with t.Cleanup. Times in the suite
// have millisecond precision, the least a store must keep.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	groups := []struct {
		name  string
		cases []testCase
	}{
		{"Accounts", accountCases},
		{"Subscriptions", subscriptionCases},
		{"Audience", audienceCases},
		{"Notifications", notificationCases},
		{"Delivery", deliveryCases},
		{"People", peopleCases},
		{"Webhooks", webhookCases},
		{"Limits", limitCases},
		{"Frequency", frequencyCases},
		{"Review", reviewCases},
		{"Waves", waveCases},
		{"WebhookDeliveries", webhookDeliveryCases},
		{"Identity", identityCases},
		{"Users", userCases},
		{"Behavior", behaviorCases},
		{"Stats", statsCases},
		{"TestDevices", testDeviceCases},
		{"Automations", automationCases},
		{"Goals", goalCases},
		{"Journeys", journeyCases},
		{"Feeds", feedCases},
		{"Templates", templateCases},
		{"Uploads", uploadCases},
		{"Integrations", integrationCases},
		{"Schedules", scheduleCases},
		{"Onsite", onsiteCases},
		{"Reports", reportCases},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					c.fn(t, open(t))
				})
			}
		})
	}
}

type testCase struct {
	name string
	fn   func(t *testing.T, s store.Store)
}

// t0 is the suite's clock origin; every time used is t0 plus whole
// milliseconds.
var t0 = time.Date(2025, 3, 14, 9, 26, 53, 589_000_000, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func ptr[T any](v T) *T { return &v }

// website is one website created by newWebsite with its owner and key.
type website struct {
	Account store.Account
	Website store.Website
	Key     store.APIKey
}

// newWebsite creates an account, a website and a full-scope key with
// distinct random ids.
func newWebsite(t *testing.T, s store.Store) website {
	t.Helper()
	id := uuid.NewString()
	w := website{
		Account: store.Account{
			ID:            uuid.NewString(),
			OwnerEmail:    "owner-" + id[:8] + "@example.com",
			EmailVerified: true,
			CreatedAt:     at(time.Millisecond),
		},
		Website: store.Website{
			ID:              id,
			ProjectID:       "prj_" + id[:8] + id[9:13],
			Name:            "Site " + id[:8],
			URL:             "https://" + id[:8] + ".example.com",
			Timezone:        "Europe/Paris",
			VAPIDPublicKey:  "BPub" + id,
			VAPIDPrivateKey: "priv" + id,
			Settings: store.Settings{
				DefaultURL:  "https://" + id[:8] + ".example.com/welcome",
				DefaultIcon: "https://" + id[:8] + ".example.com/icon.png",
				UTMSource:   "relaybell",
				UTMMedium:   "push",
				UTMCampaign: "spring",
			},
			CreatedAt: at(2 * time.Millisecond),
		},
	}
	w.Website.AccountID = w.Account.ID
	w.Key = newKey(w.Website.ID, []string{"full"})
	if err := s.CreateWebsite(context.Background(), w.Account, w.Website, w.Key); err != nil {
		t.Fatalf("CreateWebsite: %v", err)
	}
	return w
}

// newKey returns an API key of the website with a random secret hash.
func newKey(websiteID string, scopes []string) store.APIKey {
	secret := "rb_live_" + uuid.NewString()
	return store.APIKey{
		ID:        uuid.NewString(),
		WebsiteID: websiteID,
		Name:      "key " + secret[8:16],
		Prefix:    secret[:12],
		Hash:      fmt.Sprintf("%x", sha256.Sum256([]byte(secret))),
		Scopes:    scopes,
		CreatedAt: at(3 * time.Millisecond),
	}
}

// subscription returns a complete registration of a new browser endpoint.
func subscription(websiteID string) store.SubscriptionInput {
	id := uuid.NewString()
	return store.SubscriptionInput{
		WebsiteID: websiteID,
		Endpoint:  "https://fcm.googleapis.com/fcm/send/" + id,
		P256dh:    "BP256-" + id,
		Auth:      "auth-" + id[:8],
		Language:  "fr",
		Timezone:  "Europe/Paris",
		Country:   "FR",
		UserAgent: "Mozilla/5.0 (X11; Linux x86_64) Chrome/124.0",
		Device:    "desktop",
		URL:       "https://example.com/pricing",
		At:        at(time.Second),
	}
}

func subscribe(t *testing.T, s store.Store, in store.SubscriptionInput) store.SubscriptionResult {
	t.Helper()
	res, err := s.UpsertSubscription(context.Background(), in)
	if err != nil {
		t.Fatalf("UpsertSubscription(%s): %v", in.Endpoint, err)
	}
	endpointShards.Store(res.EndpointID, store.ShardOf(res.SubscriberID))
	return res
}

// endpointShards holds the shard of each endpoint subscribe registered
// (its subscriber's, store.ShardOf), which a pusher passes with its
// results and its checks (store.ShardEndpoint): recordResults and keyed
// look it up, shard 0 for an endpoint it did not register.
var endpointShards sync.Map

// shardOf is the shard subscribe registered the endpoint in.
func shardOf(endpointID string) int {
	shard, _ := endpointShards.Load(endpointID)
	n, _ := shard.(int)
	return n
}

// keyed is the endpoints as a pusher names them (store.ShardEndpoint).
func keyed(ids []string) []store.ShardEndpoint {
	if ids == nil {
		return nil
	}
	out := make([]store.ShardEndpoint, len(ids))
	for i, id := range ids {
		out[i] = store.ShardEndpoint{ID: id, Shard: shardOf(id)}
	}
	return out
}

// sharded is rs with each result's shard set, as a pusher's are.
func sharded(rs []store.PushResult) []store.PushResult {
	out := slices.Clone(rs)
	for i := range out {
		out[i].Shard = shardOf(out[i].EndpointID)
	}
	return out
}

// recordResults is s.RecordResults of the results, their shards set.
func recordResults(s store.Store, ctx context.Context, notificationID string, rs []store.PushResult) error {
	return s.RecordResults(ctx, notificationID, sharded(rs))
}

// recordAllResults is s.RecordAllResults of the results, their shards set.
func recordAllResults(s store.Store, ctx context.Context, bySend map[string][]store.PushResult) ([]string, error) {
	in := make(map[string][]store.PushResult, len(bySend))
	for id, rs := range bySend {
		in[id] = sharded(rs)
	}
	return s.RecordAllResults(ctx, in)
}

// notification returns a complete queued send of the website.
func notification(websiteID string) store.Notification {
	return store.Notification{
		ID:            uuid.NewString(),
		WebsiteID:     websiteID,
		Status:        store.StatusQueued,
		Title:         "Spring sale",
		Body:          "Everything 20% off",
		Content:       []byte(`{"title":"Spring sale"}`),
		Target:        []byte(`{"segmentId":"s1"}`),
		TargetSummary: "Segment s1",
		SendBody:      []byte(`{"title":"Spring sale","body":"Everything 20% off"}`),
		CreatedAt:     at(time.Minute),
	}
}

func create(t *testing.T, s store.Store, n store.Notification) store.Notification {
	t.Helper()
	if err := s.CreateNotification(context.Background(), &n); err != nil {
		t.Fatalf("CreateNotification(%s): %v", n.ID, err)
	}
	return n
}

func getNotification(t *testing.T, s store.Store, id string) store.Notification {
	t.Helper()
	n, err := s.NotificationByID(context.Background(), id)
	if err != nil {
		t.Fatalf("NotificationByID(%s): %v", id, err)
	}
	return n
}

// wantErr fails unless err wraps target.
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// noErr fails on a non-nil error.
func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// same fails unless got and want are equal once normalized: times in UTC,
// empty slices and maps as nil, JSON documents compacted with sorted keys
// (PostgreSQL's jsonb reformats them).
func same[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	normalize(reflect.ValueOf(&got).Elem())
	normalize(reflect.ValueOf(&want).Elem())
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Fatalf("%s:\ngot  %s\nwant %s", what, g, w)
	}
}

var timeType = reflect.TypeFor[time.Time]()

func normalize(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			normalize(v.Elem())
		}
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(v.Interface().(time.Time).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				normalize(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			var doc any
			if json.Unmarshal(v.Bytes(), &doc) == nil {
				b, _ := json.Marshal(doc)
				v.SetBytes(b)
			}
			return
		}
		for i := range v.Len() {
			normalize(v.Index(i))
		}
	case reflect.Map:
		if v.Len() == 0 {
			v.Set(reflect.Zero(v.Type()))
		}
	}
}

// PostgresDSN is the PostgreSQL the tests use: RELAYBELL_TEST_POSTGRES, or
// the test machines' local server.
func PostgresDSN() string {
	if dsn := os.Getenv("RELAYBELL_TEST_POSTGRES"); dsn != "" {
		return dsn
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// PostgresSchema creates an empty schema of its own in PostgresDSN for one
// test, dropped when the test ends, and returns its name. Without a
// reachable PostgreSQL the test fails, or is skipped under -short.
func PostgresSchema(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	dsn := PostgresDSN()
	admin := connect(t)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "rb_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		admin.Close(ctx)
		t.Fatalf("creating schema: %v", err)
	}
	admin.Close(ctx)
	t.Cleanup(func() {
		admin, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return schema
}
