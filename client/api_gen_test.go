package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/client/internal/gen"
)

// api_gen.go is the generator's output for api/openapi.json as checked in:
// a change to the document the Go types do not match fails here until
// `go generate ./client/...` is run and committed.
func TestGeneratedMatchesOpenAPI(t *testing.T) {
	spec, err := os.ReadFile(filepath.Join("..", "api", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := gen.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("api_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("client/api_gen.go does not match api/openapi.json: run `go generate ./client/...` and commit it")
	}
	if Operations != 105 {
		t.Fatalf("%d API-key operations, want 105 (update this count with the document)", Operations)
	}
}

// recorder answers each request with the next scripted answer and
// records what it was sent.
type recorder struct {
	answers []string
	got     []string
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.got = append(rc.got, fmt.Sprintf("%s %s %s|%s|%s|%s", r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Content-Type"), r.Header.Get("Idempotency-Key"), body))
	answer := `{}`
	if n := len(rc.got) - 1; n < len(rc.answers) {
		answer = rc.answers[n]
	}
	if strings.HasPrefix(answer, "403 ") {
		w.WriteHeader(403)
		answer = strings.TrimPrefix(answer, "403 ")
	}
	io.WriteString(w, answer)
}

func TestGeneratedMethods(t *testing.T) {
	rc := &recorder{answers: []string{
		`{"id":"t1","name":"Welcome","title":"Hi {name|there}","created_at":"c","updated_at":"u"}`,
		`{"ok":true}`,
		`{"items":[{"id":"s1"},{"id":"s2"}],"nextCursor":"abc"}`,
		`{"items":[{"id":"s3"}],"nextCursor":null}`,
		"id,name\n1,x\n",
		`{"id":"u1"}`,
		`{"ok":true,"eventId":"e1"}`,
		`403 {"error":"insufficient_scope","required":"reports:write","request_id":"r9"}`,
	}}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	c := New(srv.URL, "rb_live_x")
	ctx := context.Background()

	tpl, err := c.CreateTemplate(ctx, TemplateBody{Name: Ptr("Welcome"), Title: Ptr("Hi {name|there}")})
	if err != nil || tpl.ID != "t1" || *tpl.Title != "Hi {name|there}" {
		t.Fatalf("CreateTemplate: %+v %v", tpl, err)
	}
	if ok, err := c.DeleteTemplate(ctx, "a/b c"); err != nil || !ok.OK {
		t.Fatalf("DeleteTemplate: %+v %v", ok, err)
	}
	var ids []string
	for s, err := range c.Audience(ctx, &ListAudienceParams{Limit: 2, Country: "DE"}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, *s.ID)
	}
	csv, err := c.ExportSubscribers(ctx)
	if err != nil || string(csv) != "id,name\n1,x\n" {
		t.Fatalf("ExportSubscribers: %q %v", csv, err)
	}
	if up, err := c.Upload(ctx, []byte("GIF89a")); err != nil || up.ID != "u1" {
		t.Fatalf("Upload: %+v %v", up, err)
	}
	if ev, err := c.PostEvent(ctx, EventRequest{Event: Ptr("purchase")}, &PostEventParams{IdempotencyKey: "k1"}); err != nil || ev.EventID != "e1" {
		t.Fatalf("PostEvent: %+v %v", ev, err)
	}
	_, err = c.UpdateReports(ctx, ReportSettingsUpdate{Frequency: "weekly"})
	var e *Error
	if !errors.As(err, &e) || e.Status != 403 || e.Code != "insufficient_scope" || e.Required != "reports:write" || e.RequestID != "r9" {
		t.Fatalf("UpdateReports: %v", err)
	}
	want := []string{
		`POST /api/v1/templates |application/json||{"name":"Welcome","title":"Hi {name|there}"}`,
		`DELETE /api/v1/templates/a%2Fb%20c |||`,
		`GET /api/v1/audience/subscribers country=DE&limit=2|||`,
		`GET /api/v1/audience/subscribers country=DE&cursor=abc&limit=2|||`,
		`GET /api/v1/subscribers/export |||`,
		`POST /api/v1/upload |application/octet-stream||GIF89a`,
		`POST /api/v1/events |application/json|k1|{"event":"purchase"}`,
		`PUT /api/v1/reports |application/json||{"frequency":"weekly"}`,
	}
	if strings.Join(rc.got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests\n%s\nwant\n%s", strings.Join(rc.got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(ids, ",") != "s1,s2,s3" {
		t.Fatalf("Audience gave %q", ids)
	}
}
