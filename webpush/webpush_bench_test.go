package webpush_test

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"testing"

	webpushgo "github.com/SherClockHolmes/webpush-go"

	"github.com/relaybell/relaybell/webpush"
)

// acceptAll is an HTTP client that answers 201 without a network, so the
// benchmark measures the CPU cost of preparing a push.
type acceptAll struct{}

func (acceptAll) Do(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusCreated, Body: http.NoBody, Header: http.Header{}}, nil
}

type benchSetup struct {
	sub    webpush.Subscription
	key    *webpush.VAPIDKey
	signer *webpush.Signer
	target *webpush.Target
}

func newBenchSetup(b *testing.B) *benchSetup {
	b.Helper()
	browserKey, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	sub := webpush.Subscription{
		Endpoint: "https://fcm.googleapis.com/fcm/send/dGVzdC1zdWJzY3JpcHRpb24tZW5kcG9pbnQ:APA91bH",
		P256dh:   base64.RawURLEncoding.EncodeToString(browserKey.PublicKey().Bytes()),
		Auth:     base64.RawURLEncoding.EncodeToString(auth),
	}
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		b.Fatal(err)
	}
	signer, err := webpush.NewSigner(key, "mailto:ops@relaybell.example")
	if err != nil {
		b.Fatal(err)
	}
	target, err := webpush.ParseSubscription(sub)
	if err != nil {
		b.Fatal(err)
	}
	return &benchSetup{sub: sub, key: key, signer: signer, target: target}
}

func (s *benchSetup) relaybell(b *testing.B, msg webpush.Message) {
	if _, err := webpush.NewRequest(context.Background(), s.target, msg, s.signer); err != nil {
		b.Fatal(err)
	}
}

func (s *benchSetup) webpushGo(b *testing.B, payload []byte, sub *webpushgo.Subscription, opts *webpushgo.Options) {
	resp, err := webpushgo.SendNotification(payload, sub, opts)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
}

func (s *benchSetup) webpushGoArgs() (*webpushgo.Subscription, *webpushgo.Options) {
	return &webpushgo.Subscription{Endpoint: s.sub.Endpoint, Keys: webpushgo.Keys{P256dh: s.sub.P256dh, Auth: s.sub.Auth}},
		&webpushgo.Options{
			HTTPClient:      acceptAll{},
			Subscriber:      "ops@relaybell.example",
			TTL:             86400,
			VAPIDPublicKey:  s.key.PublicKey(),
			VAPIDPrivateKey: s.key.PrivateKey(),
		}
}

// BenchmarkEncryptAndSign compares preparing one push (encrypt, VAPID
// header, request) with the project's package and with webpush-go v1.4.0.
func BenchmarkEncryptAndSign(b *testing.B) {
	s := newBenchSetup(b)
	payload := []byte(samplePayload)

	b.Run("relaybell", func(b *testing.B) {
		b.ReportAllocs()
		msg := webpush.Message{Payload: payload, TTL: 86400}
		for b.Loop() {
			s.relaybell(b, msg)
		}
	})
	b.Run("webpush-go", func(b *testing.B) {
		b.ReportAllocs()
		sub, opts := s.webpushGoArgs()
		for b.Loop() {
			s.webpushGo(b, payload, sub, opts)
		}
	})
}

// BenchmarkEncryptAndSignParallel is BenchmarkEncryptAndSign on every CPU,
// with one Signer shared, as in the pusher.
func BenchmarkEncryptAndSignParallel(b *testing.B) {
	s := newBenchSetup(b)
	payload := []byte(samplePayload)

	b.Run("relaybell", func(b *testing.B) {
		b.ReportAllocs()
		msg := webpush.Message{Payload: payload, TTL: 86400}
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				s.relaybell(b, msg)
			}
		})
	})
	b.Run("webpush-go", func(b *testing.B) {
		b.ReportAllocs()
		sub, opts := s.webpushGoArgs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				s.webpushGo(b, payload, sub, opts)
			}
		})
	})
}

// BenchmarkEncrypt isolates the encryption. The floor is what RFC 8291
// requires per message whatever the implementation: a fresh ephemeral key
// pair and one ECDH.
func BenchmarkEncrypt(b *testing.B) {
	s := newBenchSetup(b)
	payload := []byte(samplePayload)
	b.Run("encrypt", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := webpush.Encrypt(s.target, payload); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor", func(b *testing.B) {
		b.ReportAllocs()
		peer, err := ecdh.P256().NewPublicKey(b64(b, s.sub.P256dh))
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			eph, err := ecdh.P256().GenerateKey(rand.Reader)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := eph.ECDH(peer); err != nil {
				b.Fatal(err)
			}
		}
	})
}
