package webpush_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/webpush"
)

// A valid browser key pair's public half and auth secret (RFC 8291 example).
const (
	uaPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
	uaAuth   = "BTBZMqHH6r4Tts7J_aSIgg"
)

func TestParseSubscription(t *testing.T) {
	rawPub, _ := base64.RawURLEncoding.DecodeString(uaPublic)
	rawAuth, _ := base64.RawURLEncoding.DecodeString(uaAuth)
	offCurve := append([]byte{0x04}, make([]byte, 64)...)
	compressed := append([]byte{0x02}, rawPub[1:33]...)

	tests := []struct {
		name       string
		sub        webpush.Subscription
		wantOrigin string // "" means an error wrapping ErrInvalidSubscription
	}{
		{"base64url raw", webpush.Subscription{"https://fcm.googleapis.com/fcm/send/abc:def", uaPublic, uaAuth}, "https://fcm.googleapis.com"},
		{"base64url padded", webpush.Subscription{"https://updates.push.services.mozilla.com/wpush/v2/gAAA",
			base64.URLEncoding.EncodeToString(rawPub), base64.URLEncoding.EncodeToString(rawAuth)}, "https://updates.push.services.mozilla.com"},
		{"std padded", webpush.Subscription{"https://web.push.apple.com/QGuQyavXu",
			base64.StdEncoding.EncodeToString(rawPub), base64.StdEncoding.EncodeToString(rawAuth)}, "https://web.push.apple.com"},
		{"std raw", webpush.Subscription{"https://wns2-par02p.notify.windows.com/w/?token=BQYAAA",
			base64.RawStdEncoding.EncodeToString(rawPub), base64.RawStdEncoding.EncodeToString(rawAuth)}, "https://wns2-par02p.notify.windows.com"},
		{"port kept in origin", webpush.Subscription{"https://127.0.0.1:8443/push/x", uaPublic, uaAuth}, "https://127.0.0.1:8443"},
		{"plain http allowed here", webpush.Subscription{"http://localhost:9000/push/x", uaPublic, uaAuth}, "http://localhost:9000"},

		{"empty endpoint", webpush.Subscription{"", uaPublic, uaAuth}, ""},
		{"relative endpoint", webpush.Subscription{"/push/x", uaPublic, uaAuth}, ""},
		{"ftp endpoint", webpush.Subscription{"ftp://push.example/x", uaPublic, uaAuth}, ""},
		{"endpoint with user", webpush.Subscription{"https://u:p@push.example/x", uaPublic, uaAuth}, ""},
		{"unparsable endpoint", webpush.Subscription{"https://push.example/%zz", uaPublic, uaAuth}, ""},
		{"p256dh empty", webpush.Subscription{"https://push.example/x", "", uaAuth}, ""},
		{"p256dh not base64", webpush.Subscription{"https://push.example/x", "B!!!", uaAuth}, ""},
		{"p256dh mixed alphabets", webpush.Subscription{"https://push.example/x", "ab-+" + uaPublic[4:], uaAuth}, ""},
		{"p256dh off curve", webpush.Subscription{"https://push.example/x", base64.RawURLEncoding.EncodeToString(offCurve), uaAuth}, ""},
		{"p256dh compressed", webpush.Subscription{"https://push.example/x", base64.RawURLEncoding.EncodeToString(compressed), uaAuth}, ""},
		{"auth 15 bytes", webpush.Subscription{"https://push.example/x", uaPublic, base64.RawURLEncoding.EncodeToString(rawAuth[:15])}, ""},
		{"auth 17 bytes", webpush.Subscription{"https://push.example/x", uaPublic, base64.RawURLEncoding.EncodeToString(append(rawAuth, 1))}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target, err := webpush.ParseSubscription(tt.sub)
			if tt.wantOrigin == "" {
				if !errors.Is(err, webpush.ErrInvalidSubscription) {
					t.Fatalf("err = %v, want ErrInvalidSubscription", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if target.Origin() != tt.wantOrigin {
				t.Errorf("Origin() = %q, want %q", target.Origin(), tt.wantOrigin)
			}
			if target.Endpoint() != tt.sub.Endpoint {
				t.Errorf("Endpoint() = %q, want %q", target.Endpoint(), tt.sub.Endpoint)
			}
		})
	}
}

func FuzzParseSubscription(f *testing.F) {
	f.Add("https://push.example.net/push/abc", uaPublic, uaAuth, []byte("hello"))
	f.Add("https://push.example.net:1/", base64.StdEncoding.EncodeToString([]byte{4}), "====", []byte{})
	f.Add("http://[::1]:80/p", strings.Repeat("A", 87), strings.Repeat("_", 22), []byte{0})
	f.Add("https://%", "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, endpoint, p256dh, auth string, payload []byte) {
		target, err := webpush.ParseSubscription(webpush.Subscription{endpoint, p256dh, auth})
		if err != nil {
			if !errors.Is(err, webpush.ErrInvalidSubscription) {
				t.Fatalf("error %v does not wrap ErrInvalidSubscription", err)
			}
			return
		}
		// A target that parses must encrypt whatever fits.
		if len(payload) > webpush.MaxPayloadSize {
			payload = payload[:webpush.MaxPayloadSize]
		}
		if _, err := webpush.Encrypt(target, payload); err != nil {
			t.Fatalf("Encrypt for a parsed target: %v", err)
		}
	})
}
