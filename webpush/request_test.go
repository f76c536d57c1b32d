package webpush_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/webpush"
	"github.com/relaybell/relaybell/webpush/webpushtest"
)

func TestNewRequest(t *testing.T) {
	key, _ := webpush.GenerateVAPIDKey()
	signer, err := webpush.NewSigner(key, "mailto:ops@relaybell.example")
	if err != nil {
		t.Fatal(err)
	}
	browser := webpushtest.NewHandler("https://push.example.net").NewBrowser(key.PublicKey())
	target, err := webpush.ParseSubscription(browser.Subscription())
	if err != nil {
		t.Fatal(err)
	}
	auth, _ := signer.Authorization("https://push.example.net")

	tests := []struct {
		name   string
		msg    webpush.Message
		header http.Header // exact; nil means an ErrInvalidMessage
	}{
		{"defaults", webpush.Message{Payload: []byte("hi")}, http.Header{
			"Content-Encoding": {"aes128gcm"}, "Content-Type": {"application/octet-stream"},
			"Ttl": {"86400"}, "Authorization": {auth},
		}},
		{"all options", webpush.Message{Payload: []byte("hi"), TTL: 60, Urgency: webpush.UrgencyHigh, Topic: "order-1042_A"}, http.Header{
			"Content-Encoding": {"aes128gcm"}, "Content-Type": {"application/octet-stream"},
			"Ttl": {"60"}, "Authorization": {auth}, "Urgency": {"high"}, "Topic": {"order-1042_A"},
		}},
		{"TTL immediate", webpush.Message{TTL: webpush.TTLImmediate, Urgency: webpush.UrgencyVeryLow}, http.Header{
			"Content-Encoding": {"aes128gcm"}, "Content-Type": {"application/octet-stream"},
			"Ttl": {"0"}, "Authorization": {auth}, "Urgency": {"very-low"},
		}},
		{"negative TTL", webpush.Message{TTL: -2}, nil},
		{"unknown urgency", webpush.Message{Urgency: "urgent"}, nil},
		{"topic too long", webpush.Message{Topic: strings.Repeat("a", 33)}, nil},
		{"topic not base64url", webpush.Message{Topic: "order 1042"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := webpush.NewRequest(context.Background(), target, tt.msg, signer)
			if tt.header == nil {
				if !errors.Is(err, webpush.ErrInvalidMessage) {
					t.Fatalf("err = %v, want ErrInvalidMessage", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != http.MethodPost || req.URL.String() != browser.Endpoint {
				t.Errorf("request is %s %s, want POST %s", req.Method, req.URL, browser.Endpoint)
			}
			if len(req.Header) != len(tt.header) {
				t.Errorf("headers = %v, want %v", req.Header, tt.header)
			}
			for k, v := range tt.header {
				if got := req.Header.Values(k); len(got) != 1 || got[0] != v[0] {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			body, _ := io.ReadAll(req.Body)
			if req.ContentLength != int64(len(body)) {
				t.Errorf("ContentLength = %d, body is %d bytes", req.ContentLength, len(body))
			}
			plain, err := browser.Decrypt(body)
			if err != nil || string(plain) != string(tt.msg.Payload) {
				t.Errorf("body decrypts to %q, %v; want %q", plain, err, tt.msg.Payload)
			}
		})
	}
}
