package webpush_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/relaybell/relaybell/webpush"
	"github.com/relaybell/relaybell/webpush/webpushtest"
)

type rfc8291Example struct {
	Plaintext  string `json:"plaintext"`
	ASPrivate  string `json:"as_private"`
	ASPublic   string `json:"as_public"`
	UAPrivate  string `json:"ua_private"`
	UAPublic   string `json:"ua_public"`
	AuthSecret string `json:"auth_secret"`
	Salt       string `json:"salt"`
	Body       string `json:"body"`
}

func loadRFC8291Example(t *testing.T) rfc8291Example {
	t.Helper()
	raw, err := os.ReadFile("testdata/rfc8291_example.json")
	if err != nil {
		t.Fatal(err)
	}
	var ex rfc8291Example
	if err := json.Unmarshal(raw, &ex); err != nil {
		t.Fatal(err)
	}
	return ex
}

func b64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("decoding %q: %v", s, err)
	}
	return b
}

func TestEncryptRFC8291Example(t *testing.T) {
	ex := loadRFC8291Example(t)
	target, err := webpush.ParseSubscription(webpush.Subscription{
		Endpoint: "https://push.example.net/push/JzLQ3raZJfFBR0aqvOMsLrt54w4rJUsV",
		P256dh:   ex.UAPublic,
		Auth:     ex.AuthSecret,
	})
	if err != nil {
		t.Fatal(err)
	}
	body, err := webpush.EncryptWith(target, []byte(ex.Plaintext), b64(t, ex.ASPrivate), b64(t, ex.Salt))
	if err != nil {
		t.Fatal(err)
	}
	if got := base64.RawURLEncoding.EncodeToString(body); got != ex.Body {
		t.Errorf("body\n got %s\nwant %s", got, ex.Body)
	}
}

func TestEncryptRoundTrip(t *testing.T) {
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	browser := webpushtest.NewHandler("https://push.example.net").NewBrowser(key.PublicKey())
	target, err := webpush.ParseSubscription(browser.Subscription())
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		payload []byte
	}{
		{"empty", nil},
		{"one byte", []byte{0}},
		{"trailing zeros", []byte("ends in zeros\x00\x00")},
		{"notification json", []byte(samplePayload)},
		{"largest", bytes.Repeat([]byte{'x'}, webpush.MaxPayloadSize)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := webpush.Encrypt(target, tt.payload)
			if err != nil {
				t.Fatal(err)
			}
			if want := len(tt.payload) + 103; len(body) != want {
				t.Errorf("body is %d bytes, want %d", len(body), want)
			}
			got, err := browser.Decrypt(body)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.payload) {
				t.Errorf("decrypted %q, want %q", got, tt.payload)
			}
		})
	}
}

func TestEncryptFreshKeyAndSaltEachMessage(t *testing.T) {
	key, _ := webpush.GenerateVAPIDKey()
	browser := webpushtest.NewHandler("https://push.example.net").NewBrowser(key.PublicKey())
	target, err := webpush.ParseSubscription(browser.Subscription())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := webpush.Encrypt(target, []byte("same"))
	b, _ := webpush.Encrypt(target, []byte("same"))
	if bytes.Equal(a[:16], b[:16]) {
		t.Error("two messages share a salt")
	}
	if bytes.Equal(a[21:86], b[21:86]) {
		t.Error("two messages share an ephemeral key")
	}
	if a[20] != 65 || a[16] != 0 || a[17] != 0 || a[18] != 0x10 || a[19] != 0 {
		t.Errorf("header rs/idlen = % x, want 00 00 10 00 41", a[16:21])
	}
}

func TestEncryptPayloadTooLarge(t *testing.T) {
	key, _ := webpush.GenerateVAPIDKey()
	browser := webpushtest.NewHandler("https://push.example.net").NewBrowser(key.PublicKey())
	target, err := webpush.ParseSubscription(browser.Subscription())
	if err != nil {
		t.Fatal(err)
	}
	_, err = webpush.Encrypt(target, make([]byte, webpush.MaxPayloadSize+1))
	if !errors.Is(err, webpush.ErrPayloadTooLarge) {
		t.Fatalf("err = %v, want ErrPayloadTooLarge", err)
	}
}

// samplePayload is a typical notification, about 300 bytes of JSON.
const samplePayload = `{"notificationId":"0b7f4c52-8d7e-4e34-9a3e-5b0f3c2d9e11","endpointId":"3f6d2a90-1c4b-4f0e-8a27-6e9b5d1c7a42",` +
	`"title":"Your order has shipped","body":"Track parcel 1Z999AA10123456784 on its way to you.",` +
	`"url":"https://shop.example.com/orders/1042?utm_source=relaybell","icon":"https://shop.example.com/icon-192.png",` +
	`"tag":"order-1042","variant":"a"}`
