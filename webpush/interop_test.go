package webpush_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	webpushgo "github.com/SherClockHolmes/webpush-go"

	"github.com/relaybell/relaybell/webpush"
	"github.com/relaybell/relaybell/webpush/webpushtest"
)

// webpush-go is an independent implementation: the fake push service must
// accept what it sends, or the fake only agrees with our own mistakes.
func TestWebpushGoIsAcceptedByFakeService(t *testing.T) {
	server := webpushtest.NewServer()
	defer server.Close()
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	b := server.NewBrowser(key.PublicKey())
	sub := b.Subscription()

	send := func(subscriber string, urgency webpushgo.Urgency) *http.Response {
		t.Helper()
		resp, err := webpushgo.SendNotificationWithContext(context.Background(), []byte(samplePayload),
			&webpushgo.Subscription{Endpoint: sub.Endpoint, Keys: webpushgo.Keys{P256dh: sub.P256dh, Auth: sub.Auth}},
			&webpushgo.Options{
				HTTPClient:      server.HTTPClient(),
				Subscriber:      subscriber,
				TTL:             600, // webpush-go sends TTL: 0 unless told
				Urgency:         urgency,
				Topic:           "interop",
				VAPIDPublicKey:  key.PublicKey(),
				VAPIDPrivateKey: key.PrivateKey(),
			})
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}

	// webpush-go prefixes "mailto:" itself, so the subscriber goes without it.
	if resp := send("ops@relaybell.example", webpushgo.UrgencyLow); resp.StatusCode != http.StatusCreated {
		t.Fatalf("status = %d, rejections: %+v", resp.StatusCode, server.Rejections())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := server.WaitFor(ctx, 1); err != nil {
		t.Fatal(err)
	}
	d := b.Received()[0]
	if string(d.Payload) != samplePayload || d.TTL != 600 || d.Urgency != "low" || d.Topic != "interop" {
		t.Errorf("delivery = %q ttl=%d urgency=%q topic=%q", d.Payload, d.TTL, d.Urgency, d.Topic)
	}
	if d.Claims.Sub != "mailto:ops@relaybell.example" || d.Claims.Aud != server.URL {
		t.Errorf("claims = %+v", d.Claims)
	}

	// Given "mailto:x", webpush-go signs sub "mailto:mailto:x": refused.
	if resp := send("mailto:ops@relaybell.example", webpushgo.UrgencyLow); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("double mailto: status = %d, want 401", resp.StatusCode)
	}
	rej := server.Rejections()
	if len(rej) != 1 || !strings.Contains(rej[0].Reason, "mailto: twice") {
		t.Errorf("rejections = %+v, want one for mailto: twice", rej)
	}
}
