package pusher

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/webpush/webpushtest"
)

func TestRemoteBatch(t *testing.T) {
	r := newRig(t, Config{})
	b1, rc1 := r.browser(webpushtest.Behavior{})
	b2, rc2 := r.browser(webpushtest.Behavior{})
	srv := httptest.NewServer(Handler(r.p, "cluster-secret"))
	defer srv.Close()
	batch := Batch{NotificationID: r.n.ID, WebsiteID: r.site.ID, Recipients: []store.Recipient{rc1, rc2}}

	if err := NewRemote(srv.URL, "wrong", nil).Push(context.Background(), batch); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong token: %v", err)
	}
	if len(b1.Received()) != 0 {
		t.Fatal("an unauthorized batch was pushed")
	}
	if err := NewRemote(srv.URL, "cluster-secret", nil).Push(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if len(b1.Received()) != 1 || len(b2.Received()) != 1 || r.counters().Sent != 2 {
		t.Fatalf("remote batch: %d %d %+v", len(b1.Received()), len(b2.Received()), r.counters())
	}

	resp, err := http.Post(srv.URL+BatchPath, "application/json", strings.NewReader(`{"notificationId":`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+BatchPath, strings.NewReader(`{"notificationId":`))
	req.Header.Set("Authorization", "Bearer cluster-secret")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad body: %d", resp.StatusCode)
	}
}

func TestRemoteBatchNotDoneIs503(t *testing.T) {
	r := newRig(t, Config{})
	_, rc := r.browser(webpushtest.Behavior{Delay: 5 * time.Second})
	srv := httptest.NewServer(Handler(r.p, "s"))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := NewRemote(srv.URL, "s", nil).Push(ctx, Batch{NotificationID: r.n.ID, WebsiteID: r.site.ID, Recipients: []store.Recipient{rc}})
	if err == nil {
		t.Fatal("a batch cut short reported done")
	}
	if got := r.counters(); got.Processed != 0 {
		t.Fatalf("a batch cut short recorded results: %+v", got)
	}
}
