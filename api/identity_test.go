package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// signExternalID is what the customer's server computes (README,
// "Identity verification"): the hex HMAC-SHA256 of the external id keyed
// with the whole secret.
func signExternalID(secret, externalID string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(externalID))
	return hex.EncodeToString(m.Sum(nil))
}

// identitySecret is one secret as PUT /identity shows it.
type identitySecret struct {
	ID        string `json:"id"`
	Prefix    string `json:"prefix"`
	Secret    string `json:"secret"`
	CreatedAt string `json:"created_at"`
}

// secretRe is a whole identity secret: the prefix and rand.Text's 26
// base32 characters.
var secretRe = regexp.MustCompile(`^rbid_[A-Z2-7]{26}$`)

// putIdentity sends PUT /identity with key and wants 200 and an answer
// whose members are exactly mode, the secrets listed (by id and prefix)
// and, when a secret was added, newSecret; it returns the new secret.
func (h *harness) putIdentity(t *testing.T, key, body, mode string, listed ...identitySecret) identitySecret {
	t.Helper()
	h.clock.Add(time.Minute) // secrets added by successive calls are listed in order
	now := h.clock.Now().UTC().Format(notification.TimeLayout)
	r := h.do("PUT", "/api/v1/identity", body, auth(key)...)
	if r.status != 200 {
		t.Fatalf("PUT /identity %s: %d %s", body, r.status, r.body)
	}
	var got struct {
		NewSecret *identitySecret `json:"newSecret"`
	}
	json.Unmarshal(r.body, &got)
	var added identitySecret
	if got.NewSecret != nil {
		added = *got.NewSecret
		if !secretRe.MatchString(added.Secret) || added.Prefix != added.Secret[:12] || added.CreatedAt != now {
			t.Fatalf("PUT /identity %s: new secret %+v", body, added)
		}
		listed = append(listed, identitySecret{ID: added.ID, Prefix: added.Prefix, CreatedAt: added.CreatedAt})
	}
	want := identityBody(mode, listed...)
	if got.NewSecret != nil {
		want = strings.TrimSuffix(want, "}") + fmt.Sprintf(`,"newSecret":{"id":%q,"prefix":%q,"secret":%q,"created_at":%q}}`,
			added.ID, added.Prefix, added.Secret, added.CreatedAt)
	}
	if string(r.body) != want {
		t.Fatalf("PUT /identity %s:\n %s\nwant\n %s", body, r.body, want)
	}
	return added
}

// identityBody is the exact answer of GET /identity.
func identityBody(mode string, secrets ...identitySecret) string {
	list := make([]string, len(secrets))
	for i, s := range secrets {
		list[i] = fmt.Sprintf(`{"id":%q,"prefix":%q,"created_at":%q}`, s.ID, s.Prefix, s.CreatedAt)
	}
	return fmt.Sprintf(`{"mode":%q,"secrets":[%s]}`, mode, strings.Join(list, ","))
}

// listed is s as GET /identity lists it: without the secret.
func (s identitySecret) listed() identitySecret {
	s.Secret = ""
	return s
}

func (h *harness) wantIdentity(t *testing.T, mode string, secrets ...identitySecret) {
	t.Helper()
	r := h.do("GET", "/api/v1/identity", "", auth(h.site.APIKey)...)
	if want := identityBody(mode, secrets...); r.status != 200 || string(r.body) != want {
		t.Fatalf("GET /identity: %d\n %s\nwant\n %s", r.status, r.body, want)
	}
}

func TestIdentityRoutes(t *testing.T) {
	h := newHarness(t)
	key := h.site.APIKey
	h.wantIdentity(t, "off")

	// Any key may read and change it (spec 5, rule 1); none is 401.
	sendOnly := h.key([]string{ScopeSend}, nil)
	expectError(t, h.do("GET", "/api/v1/identity", ""), 401, CodeNotAuthenticated, "")
	first := h.putIdentity(t, sendOnly, `{"addSecret":true}`, "off")
	h.wantIdentity(t, "off", first.listed())
	h.putIdentity(t, key, `{"mode":"report"}`, "report", first.listed())
	second := h.putIdentity(t, key, `{"addSecret":true,"mode":"enforce"}`, "enforce", first.listed())
	h.wantIdentity(t, "enforce", first.listed(), second.listed())

	// The whole secrets are never shown again, nor in the settings.
	for _, path := range []string{"/api/v1/identity", "/api/v1/settings"} {
		r := h.do("GET", path, "", auth(key)...)
		if r.status != 200 || bytes.Contains(r.body, []byte(first.Secret)) || bytes.Contains(r.body, []byte(second.Secret)) {
			t.Errorf("GET %s shows a secret: %d %s", path, r.status, r.body)
		}
	}

	// Refusals, each leaving everything as it was.
	before := h.dump.take(t)
	f := func(body string, status int, code, msg string) {
		t.Helper()
		extra := ""
		if msg != "" {
			extra = fmt.Sprintf(`,"message":%q`, msg)
		}
		expectError(t, h.do("PUT", "/api/v1/identity", body, auth(key)...), status, code, extra)
		if after := h.dump.take(t); after != before {
			t.Fatalf("PUT /identity %s refused, but the stores changed:\n%s", body, dumpDiff(before, after))
		}
	}
	f(`{}`, 400, CodeNothingToUpdate, "give mode, addSecret: true or removeSecretId")
	f(`{"addSecret":false}`, 400, CodeNothingToUpdate, "give mode, addSecret: true or removeSecretId")
	f(`{"mode":null,"removeSecretId":null}`, 400, CodeNothingToUpdate, "give mode, addSecret: true or removeSecretId")
	f(`{"mode":"strict"}`, 400, CodeInvalidJSON, "mode must be off, report or enforce")
	f(`{"mode":"Enforce"}`, 400, CodeInvalidJSON, "mode must be off, report or enforce")
	f(`{"mode":2}`, 400, CodeInvalidJSON, "field mode has the wrong type (number)")
	f(`{"addSecret":"yes"}`, 400, CodeInvalidJSON, "field addSecret has the wrong type (string)")
	f(`{"secret":"mine"}`, 400, CodeUnknownField, `unknown field "secret"`)
	f(`{"removeSecretId":"nope"}`, 404, CodeNotFound, "removeSecretId names no identity secret of this website")
	f(`{"removeSecretId":"00000000-0000-4000-8000-000000000000"}`, 404, CodeNotFound, "removeSecretId names no identity secret of this website")
	f(`{"addSecret":true}`, 409, CodeTooManySecrets, "at most 2 identity secrets are active at once: remove one (removeSecretId) to add another")
	// Only the dashboard turns verification off, or down to report-only
	// (which refuses nothing); not even together with a valid change.
	const lower = "only the signed-in dashboard can turn identity verification off or down to report-only (mode is enforce)"
	f(`{"mode":"off"}`, 403, CodeSessionRequired, lower)
	f(`{"mode":"report"}`, 403, CodeSessionRequired, lower)
	f(`{"mode":"off","removeSecretId":"`+first.ID+`"}`, 403, CodeSessionRequired, lower)
	// Nor by removing every secret.
	h.putIdentity(t, key, `{"removeSecretId":"`+strings.ToUpper(first.ID)+`"}`, "enforce", second.listed())
	before = h.dump.take(t)
	f(`{"removeSecretId":"`+second.ID+`"}`, 409, CodeSecretRequired, "identity verification in enforce mode needs an active secret: add one (addSecret: true), in the same call or before")

	// Rotation in one call: the old one goes, a new one comes.
	third := h.putIdentity(t, key, `{"removeSecretId":"`+second.ID+`","addSecret":true}`, "enforce")
	h.wantIdentity(t, "enforce", third.listed())
	// Raising or keeping the mode is fine with a key.
	h.putIdentity(t, key, `{"mode":"enforce"}`, "enforce", third.listed())

	// A website that never set it up cannot turn it on without a secret;
	// with one in the same call it can. Off stays off for a key.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	before = h.dump.take(t)
	expectError(t, h.do("PUT", "/api/v1/identity", `{"mode":"report"}`, auth(other.APIKey)...), 409, CodeSecretRequired,
		`,"message":"identity verification in report mode needs an active secret: add one (addSecret: true), in the same call or before"`)
	if after := h.dump.take(t); after != before {
		t.Fatalf("refused, but the stores changed:\n%s", dumpDiff(before, after))
	}
	h.putIdentity(t, other.APIKey, `{"mode":"off"}`, "off")
	theirs := h.putIdentity(t, other.APIKey, `{"mode":"report","addSecret":true}`, "report")
	// Each website sees its own.
	h.wantIdentity(t, "enforce", third.listed())
	r := h.do("GET", "/api/v1/identity", "", auth(other.APIKey)...)
	if want := identityBody("report", theirs.listed()); string(r.body) != want {
		t.Errorf("other website: %s, want %s", r.body, want)
	}
}

// enforceIdentity turns the harness website's verification to mode with
// one new secret, which it returns.
func (h *harness) enforceIdentity(t *testing.T, mode string) identitySecret {
	t.Helper()
	return h.putIdentity(t, h.site.APIKey, `{"addSecret":true,"mode":"`+mode+`"}`, mode)
}

// registration posts a browser registration and returns the answer.
func (h *harness) registration(t *testing.T, projectID, endpoint, extra string) response {
	t.Helper()
	return h.do("POST", "/api/v1/projects/"+projectID+"/subscriptions", subscribeBody(t, endpoint, extra), "User-Agent", uaDesktop)
}

// linked is the external id of the endpoint's subscriber.
func (h *harness) linked(t *testing.T, websiteID, endpointID string) string {
	t.Helper()
	ctx := context.Background()
	ep, err := h.st.Endpoint(ctx, websiteID, endpointID)
	if err != nil {
		t.Fatalf("endpoint %s: %v", endpointID, err)
	}
	p, err := h.st.Person(ctx, websiteID, ep.SubscriberID)
	if err != nil {
		t.Fatalf("subscriber %s: %v", ep.SubscriberID, err)
	}
	return p.ExternalID
}

func TestIdentityEnforce(t *testing.T) {
	h := newHarness(t)
	secret := h.enforceIdentity(t, store.IdentityEnforce).Secret
	project := h.site.ProjectID
	const endpoint = "https://fcm.googleapis.com/fcm/send/alice"

	// A valid hash links; the hash may be in upper case too.
	r := h.registration(t, project, endpoint, `,"externalId":"alice","externalIdHash":"`+signExternalID(secret, "alice")+`"`)
	if r.status != 201 {
		t.Fatalf("valid hash: %d %s", r.status, r.body)
	}
	endpointID := r.json(t)["endpointId"].(string)
	if got := h.linked(t, h.site.WebsiteID, endpointID); got != "alice" {
		t.Fatalf("linked to %q, want alice", got)
	}
	if r := h.registration(t, project, "https://fcm.googleapis.com/fcm/send/alice-2",
		`,"externalId":"alice","externalIdHash":"`+strings.ToUpper(signExternalID(secret, "alice"))+`"`); r.status != 201 {
		t.Fatalf("upper-case hash: %d %s", r.status, r.body)
	}
	// Registrations that link nothing need no hash: anonymous, keeping the
	// link ("" ), unlinking (null).
	for _, extra := range []string{``, `,"externalId":""`, `,"externalId":"","externalIdHash":"junk"`} {
		if r := h.registration(t, project, "https://fcm.googleapis.com/fcm/send/anon", extra); r.status != 201 && r.status != 200 {
			t.Fatalf("anonymous %s: %d %s", extra, r.status, r.body)
		}
	}

	// Without a valid hash the registration is refused as a whole: a new
	// browser is not stored, a known one keeps its person.
	const tail = ". Nothing was stored: register without externalId to subscribe anonymously"
	refused := func(endpoint, extra, msg string) {
		t.Helper()
		before := h.dump.take(t)
		expectError(t, h.registration(t, project, endpoint, extra), 403, CodeInvalidExternalIDHash, fmt.Sprintf(`,"message":%q`, msg+tail))
		if after := h.dump.take(t); after != before {
			t.Fatalf("refused %s, but the stores changed:\n%s", extra, dumpDiff(before, after))
		}
	}
	for _, ep := range []string{"https://fcm.googleapis.com/fcm/send/mallory", endpoint} {
		refused(ep, `,"externalId":"bob"`, hashProblems[hashMissing])
		refused(ep, `,"externalId":"bob","externalIdHash":""`, hashProblems[hashMissing])
		refused(ep, `,"externalId":"bob","externalIdHash":null`, hashProblems[hashMissing])
		refused(ep, `,"externalId":"bob","externalIdHash":"xyz"`, hashProblems[hashMalformed])
		refused(ep, `,"externalId":"bob","externalIdHash":"`+signExternalID(secret, "bob")[:63]+`"`, hashProblems[hashMalformed])
		refused(ep, `,"externalId":"bob","externalIdHash":"`+strings.Repeat("g", 64)+`"`, hashProblems[hashMalformed])
		refused(ep, `,"externalId":"bob","externalIdHash":"`+signExternalID(secret, "bob")+`0"`, hashProblems[hashMalformed])
		// A hash of another external id, of the id in another case, or
		// under another key.
		refused(ep, `,"externalId":"bob","externalIdHash":"`+signExternalID(secret, "alice")+`"`, hashProblems[hashMismatch])
		refused(ep, `,"externalId":"bob","externalIdHash":"`+signExternalID(secret, "Bob")+`"`, hashProblems[hashMismatch])
		refused(ep, `,"externalId":"bob","externalIdHash":"`+signExternalID("rbid_guess", "bob")+`"`, hashProblems[hashMismatch])
	}
	if _, err := h.st.Person(context.Background(), h.site.WebsiteID, "bob"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bob: %v, want not found", err)
	}
	if got := h.linked(t, h.site.WebsiteID, endpointID); got != "alice" {
		t.Errorf("after refusals linked to %q, want alice", got)
	}
	// Registered again without the external id, the browser subscribes
	// anonymously, as the SDK does after a refusal.
	r = h.registration(t, project, "https://fcm.googleapis.com/fcm/send/mallory", "")
	if r.status != 201 || h.linked(t, h.site.WebsiteID, r.json(t)["endpointId"].(string)) != "" {
		t.Errorf("anonymous after a refusal: %d %s", r.status, r.body)
	}

	// Logout, then login as another person with that person's hash.
	if r := h.registration(t, project, endpoint, `,"externalId":null`); r.status != 200 || h.linked(t, h.site.WebsiteID, endpointID) != "" {
		t.Fatalf("logout: %d %s", r.status, r.body)
	}
	if r := h.registration(t, project, endpoint, `,"externalId":"bob","externalIdHash":"`+signExternalID(secret, "bob")+`"`); r.status != 200 ||
		h.linked(t, h.site.WebsiteID, endpointID) != "bob" {
		t.Fatalf("login as bob: %d %s", r.status, r.body)
	}

	// Refusals are counted by mode and reason: two endpoints, ten each.
	metrics := h.metricsText()
	for _, line := range []string{
		`relaybell_api_identity_verification_failures_total{mode="enforce",reason="missing"} 6`,
		`relaybell_api_identity_verification_failures_total{mode="enforce",reason="malformed"} 8`,
		`relaybell_api_identity_verification_failures_total{mode="enforce",reason="mismatch"} 6`,
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("metrics lack %s", line)
		}
	}
}

// TestIdentityAnotherWebsite: one website's secret signs nothing for
// another website.
func TestIdentityAnotherWebsite(t *testing.T) {
	h := newHarness(t)
	ours := h.enforceIdentity(t, store.IdentityEnforce).Secret
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	theirs := h.putIdentity(t, other.APIKey, `{"addSecret":true,"mode":"enforce"}`, "enforce").Secret
	const ep = "https://fcm.googleapis.com/fcm/send/x"
	expectError(t, h.registration(t, other.ProjectID, ep, `,"externalId":"carol","externalIdHash":"`+signExternalID(ours, "carol")+`"`),
		403, CodeInvalidExternalIDHash, fmt.Sprintf(`,"message":%q`, hashProblems[hashMismatch]+". Nothing was stored: register without externalId to subscribe anonymously"))
	expectCode(t, h.registration(t, h.site.ProjectID, ep, `,"externalId":"carol","externalIdHash":"`+signExternalID(theirs, "carol")+`"`),
		403, CodeInvalidExternalIDHash)
	for _, c := range []struct{ project, website, secret string }{{other.ProjectID, other.WebsiteID, theirs}, {h.site.ProjectID, h.site.WebsiteID, ours}} {
		r := h.registration(t, c.project, ep, `,"externalId":"carol","externalIdHash":"`+signExternalID(c.secret, "carol")+`"`)
		if r.status != 201 || h.linked(t, c.website, r.json(t)["endpointId"].(string)) != "carol" {
			t.Errorf("own secret on %s: %d %s", c.project, r.status, r.body)
		}
	}
}

// TestIdentityRotation: with two secrets active, hashes under either
// link; once the old one is removed, its hashes are refused on the next
// registration (nothing is cached).
func TestIdentityRotation(t *testing.T) {
	h := newHarness(t)
	key := h.site.APIKey
	old := h.enforceIdentity(t, store.IdentityEnforce)
	next := h.putIdentity(t, key, `{"addSecret":true}`, "enforce", old.listed())
	link := func(n int, secret string) response {
		t.Helper()
		id := fmt.Sprintf("user-%d", n)
		return h.registration(t, h.site.ProjectID, fmt.Sprintf("https://fcm.googleapis.com/fcm/send/%d", n),
			`,"externalId":"`+id+`","externalIdHash":"`+signExternalID(secret, id)+`"`)
	}
	for i, s := range []string{old.Secret, next.Secret} {
		if r := link(i, s); r.status != 201 || h.linked(t, h.site.WebsiteID, r.json(t)["endpointId"].(string)) != fmt.Sprintf("user-%d", i) {
			t.Fatalf("secret %d of 2: %d %s", i+1, r.status, r.body)
		}
	}
	h.putIdentity(t, key, `{"removeSecretId":"`+old.ID+`"}`, "enforce", next.listed())
	expectError(t, link(2, old.Secret), 403, CodeInvalidExternalIDHash,
		fmt.Sprintf(`,"message":%q`, hashProblems[hashMismatch]+". Nothing was stored: register without externalId to subscribe anonymously"))
	if r := link(3, next.Secret); r.status != 201 {
		t.Fatalf("the new secret after rotation: %d %s", r.status, r.body)
	}
}

// TestIdentityReport: report-only lets every link through, and logs and
// counts those enforcement would refuse.
func TestIdentityReport(t *testing.T) {
	st, an := openStores(t)
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	clock := &testClock{now: testStart}
	a, err := newAPI(t, testConfig{}, st, an, nil, slog.New(slog.NewJSONHandler(&logs, nil)), reg, WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, api: a, st: &failStore{Store: st}, clock: clock, reg: reg}
	if h.site, err = CreateWebsite(context.Background(), st, NewWebsite{Name: "Shop", URL: "https://shop.example"}, testStart); err != nil {
		t.Fatal(err)
	}
	secret := h.enforceIdentity(t, store.IdentityReport).Secret

	for i, c := range []struct{ extra, reason string }{
		{`,"externalId":"dave"`, hashMissing},
		{`,"externalId":"erin","externalIdHash":"nothex"`, hashMalformed},
		{`,"externalId":"frank","externalIdHash":"` + signExternalID(secret, "dave") + `"`, hashMismatch},
		{`,"externalId":"grace","externalIdHash":"` + signExternalID(secret, "grace") + `"`, ""},
	} {
		logs.Reset()
		r := h.registration(t, h.site.ProjectID, fmt.Sprintf("https://fcm.googleapis.com/fcm/send/%d", i), c.extra)
		if r.status != 201 {
			t.Fatalf("%s: %d %s", c.extra, r.status, r.body)
		}
		var body struct{ EndpointID string }
		json.Unmarshal(r.body, &body)
		if got, want := h.linked(t, h.site.WebsiteID, body.EndpointID), strings.Split(c.extra, `"`)[3]; got != want {
			t.Errorf("%s: linked to %q, want %q", c.extra, got, want)
		}
		var line map[string]any
		json.Unmarshal(logs.Bytes(), &line)
		if c.reason == "" {
			if logs.Len() != 0 {
				t.Errorf("%s: logged %s", c.extra, logs.Bytes())
			}
			continue
		}
		if line["level"] != "WARN" || line["msg"] != "identity verification would refuse a link (report-only mode)" ||
			line["reason"] != c.reason || line["website_id"] != h.site.WebsiteID || line["request_id"] != r.header["X-Request-Id"] {
			t.Errorf("%s: logged %s", c.extra, logs.Bytes())
		}
		if bytes.Contains(logs.Bytes(), []byte(secret)) {
			t.Errorf("%s: the log holds the secret", c.extra)
		}
	}
	metrics := h.metricsText()
	for _, reason := range []string{hashMissing, hashMalformed, hashMismatch} {
		if line := `relaybell_api_identity_verification_failures_total{mode="report",reason="` + reason + `"} 1` + "\n"; !strings.Contains(metrics, line) {
			t.Errorf("metrics lack %s", line)
		}
	}
	if strings.Contains(metrics, `mode="enforce"`) {
		t.Error("report mode counted an enforced refusal")
	}
}
