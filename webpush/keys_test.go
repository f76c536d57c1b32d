package webpush_test

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/relaybell/relaybell/webpush"
)

func TestGenerateVAPIDKey(t *testing.T) {
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	pub := b64(t, key.PublicKey())
	if len(pub) != 65 || pub[0] != 0x04 {
		t.Errorf("public key is %d bytes starting %#x, want 65 starting 0x04", len(pub), pub[0])
	}
	if priv := b64(t, key.PrivateKey()); len(priv) != 32 {
		t.Errorf("private key is %d bytes, want 32", len(priv))
	}
	again, err := webpush.ParseVAPIDKey(key.PrivateKey())
	if err != nil {
		t.Fatal(err)
	}
	if again.PublicKey() != key.PublicKey() || again.PrivateKey() != key.PrivateKey() {
		t.Error("parsing PrivateKey() does not give the same key back")
	}
}

func TestParseVAPIDKey(t *testing.T) {
	// The application server key of the RFC 8291 example.
	const (
		private = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
		public  = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
	)
	raw, _ := base64.RawURLEncoding.DecodeString(private)
	order := "_____wAAAAD__________7zm-q2nF56E87nKwvxjJVE" // n, the group order

	f := func(in string, wantErr bool) {
		t.Helper()
		key, err := webpush.ParseVAPIDKey(in)
		if wantErr {
			if !errors.Is(err, webpush.ErrInvalidKey) {
				t.Errorf("ParseVAPIDKey(%q) err = %v, want ErrInvalidKey", in, err)
			}
			return
		}
		if err != nil {
			t.Errorf("ParseVAPIDKey(%q): %v", in, err)
			return
		}
		if key.PublicKey() != public || key.PrivateKey() != private {
			t.Errorf("ParseVAPIDKey(%q) = %s / %s, want %s / %s", in, key.PublicKey(), key.PrivateKey(), public, private)
		}
	}
	f(private, false)
	f(base64.URLEncoding.EncodeToString(raw), false)
	f(base64.StdEncoding.EncodeToString(raw), false)
	f(base64.RawStdEncoding.EncodeToString(raw), false)
	f("", true)
	f("not base64!", true)
	f(private[:20], true)                                                       // too short
	f(base64.RawURLEncoding.EncodeToString(append(raw, 0)), true)               // too long
	f(base64.RawURLEncoding.EncodeToString(make([]byte, 32)), true)             // zero scalar
	f(order, true)                                                              // scalar = n
	f("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS", true) // 48 bytes
}
