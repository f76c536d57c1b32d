package signature

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// TestSignVectors checks Sign against testdata/vectors.json, whose values
// were computed outside Go with
//
//	printf '%s' "<t>.<body>" | openssl dgst -sha256 -hmac "<secret>"   # v1
//	printf '%s' "<body>" | openssl dgst -sha256 -hmac "<secret>"       # sha256=
//
// so a mistake shared by Sign and Verify cannot hide. The same file serves
// anyone writing a verifier in another language.
func TestSignVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct {
		Name             string
		Secret           string
		T                int64
		Body             string
		WebhookSignature string
		LegacySignature  string
	}
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors) == 0 {
		t.Fatal("no vectors")
	}
	for _, vec := range vectors {
		t.Run(vec.Name, func(t *testing.T) {
			webhookSig, legacySig := Sign(vec.Secret, time.Unix(vec.T, 0), []byte(vec.Body))
			if webhookSig != vec.WebhookSignature {
				t.Errorf("webhook signature\n got %s\nwant %s", webhookSig, vec.WebhookSignature)
			}
			if legacySig != vec.LegacySignature {
				t.Errorf("legacy signature\n got %s\nwant %s", legacySig, vec.LegacySignature)
			}
			v := Verifier{Secret: vec.Secret, Now: func() time.Time { return time.Unix(vec.T, 0) }}
			if err := v.Verify(vec.WebhookSignature, "", []byte(vec.Body)); err != nil {
				t.Errorf("Verify: %v", err)
			}
		})
	}
}

// TestSignHandComputed is the first vector written out, so the exact
// header values can be read here.
func TestSignHandComputed(t *testing.T) {
	const (
		secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		body   = `{"event":"webhook.test","data":{"webhookId":"wh_1","message":"hello"},"projectId":"prj_1","at":"2023-11-14T22:13:20Z"}`
		// HMAC-SHA256 of "1700000000." + body, and of body alone.
		wantWebhook = "t=1700000000,v1=7cb961530578c1f9a07e3e6a3ad31767596119cfdb5b59d83185e657fc6bcbad"
		wantLegacy  = "sha256=2e82fc3d4374980d666349ffd28338b37802b2e94d5b77d32e65ce5531091599"
	)
	// The fraction of a second is dropped: t is whole unix seconds.
	at := time.Unix(1700000000, 999_999_999).In(time.FixedZone("UTC+5", 5*3600))
	webhookSig, legacySig := Sign(secret, at, []byte(body))
	if webhookSig != wantWebhook {
		t.Errorf("webhook signature\n got %s\nwant %s", webhookSig, wantWebhook)
	}
	if legacySig != wantLegacy {
		t.Errorf("legacy signature\n got %s\nwant %s", legacySig, wantLegacy)
	}
}

// TestSignLegacyIgnoresTime: the legacy header signs the body only, so
// every attempt of a delivery carries the same value, while the timestamped
// one changes with t (spec 6.4 rule 3).
func TestSignLegacyIgnoresTime(t *testing.T) {
	body := []byte(`{"event":"subscriber.created"}`)
	w1, l1 := Sign("whsec_x", time.Unix(1700000000, 0), body)
	w2, l2 := Sign("whsec_x", time.Unix(1700000060, 0), body)
	if l1 != l2 {
		t.Errorf("legacy signature changed with t: %s, %s", l1, l2)
	}
	if w1 == w2 {
		t.Errorf("webhook signature did not change with t: %s", w1)
	}
	if _, l3 := Sign("whsec_x", time.Unix(1700000000, 0), append(body, ' ')); l3 == l1 {
		t.Errorf("legacy signature did not change with the body")
	}
}
