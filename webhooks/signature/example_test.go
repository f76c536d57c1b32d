package signature_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/relaybell/relaybell/webhooks/signature"
)

// RelayBell's delivery engine signs each attempt and sets both headers.
func ExampleSign() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"event":"webhook.test","data":{"webhookId":"wh_1","message":"hello"},"projectId":"prj_1","at":"2023-11-14T22:13:20Z"}`)
	webhookSig, legacySig := signature.Sign(secret, time.Unix(1700000000, 0), body)

	req, _ := http.NewRequest(http.MethodPost, "https://example.com/hooks", strings.NewReader(string(body)))
	req.Header.Set(signature.HeaderWebhookSignature, webhookSig)
	req.Header.Set(signature.HeaderSignature, legacySig)

	fmt.Println(signature.HeaderWebhookSignature+":", webhookSig)
	fmt.Println(signature.HeaderSignature+":", legacySig)
	// Output:
	// X-RelayBell-Webhook-Signature: t=1700000000,v1=7cb961530578c1f9a07e3e6a3ad31767596119cfdb5b59d83185e657fc6bcbad
	// X-RelayBell-Signature: sha256=2e82fc3d4374980d666349ffd28338b37802b2e94d5b77d32e65ce5531091599
}

func ExampleVerifier_Verify() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"event":"webhook.test","data":{"webhookId":"wh_1","message":"hello"},"projectId":"prj_1","at":"2023-11-14T22:13:20Z"}`)
	header := "t=1700000000,v1=7cb961530578c1f9a07e3e6a3ad31767596119cfdb5b59d83185e657fc6bcbad"

	v := signature.Verifier{
		Secret: secret,
		// A fixed clock for the example; leave Now nil to use time.Now.
		Now: func() time.Time { return time.Unix(1700000042, 0) },
	}
	fmt.Println(v.Verify(header, "", body))

	tampered := []byte(strings.Replace(string(body), "hello", "HELLO", 1))
	fmt.Println(v.Verify(header, "", tampered))

	v.Now = func() time.Time { return time.Unix(1700000000+301, 0) }
	err := v.Verify(header, "", body)
	fmt.Println(errors.Is(err, signature.ErrTimestamp), err)
	// Output:
	// <nil>
	// signature: no v1 signature matches
	// true signature: timestamp outside the tolerance: t is 5m1s in the past, tolerance 5m0s
}

// A receiver's handler: verify, skip duplicates, handle, answer 2xx.
func ExampleVerifier_VerifyRequest() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	clock := func() time.Time { return time.Unix(1700000000, 0) } // fixed for the example
	verifier := &signature.Verifier{
		Secret: secret,
		Now:    clock,
		Seen:   signature.NewMemorySeen(0, 0),
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := verifier.VerifyRequest(r)
		switch {
		case errors.Is(err, signature.ErrDuplicate):
			w.WriteHeader(http.StatusNoContent) // handled before: stop the retries
			return
		case errors.Is(err, signature.ErrBodyTooLarge):
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		fmt.Printf("handling %s: %s\n", r.Header.Get(signature.HeaderEvent), body)
		w.WriteHeader(http.StatusNoContent)
	})

	deliver := func(body string, key string) {
		webhookSig, legacySig := signature.Sign(key, clock(), []byte(body))
		r := httptest.NewRequest(http.MethodPost, "/relaybell", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(signature.HeaderEvent, "webhook.test")
		r.Header.Set(signature.HeaderDelivery, "0b9c1b9e-6f0e-4b44-9b6a-2a4c1c9f3d11")
		r.Header.Set(signature.HeaderWebhookSignature, webhookSig)
		r.Header.Set(signature.HeaderSignature, legacySig)
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		fmt.Println(w.Code)
	}
	body := `{"event":"webhook.test","data":{"webhookId":"wh_1","message":"hello"}}`
	deliver(body, "whsec_wrong") // not signed with our secret
	deliver(body, secret)
	deliver(body, secret) // a retry of a delivery already handled
	// Output:
	// 401
	// handling webhook.test: {"event":"webhook.test","data":{"webhookId":"wh_1","message":"hello"}}
	// 204
	// 204
}
