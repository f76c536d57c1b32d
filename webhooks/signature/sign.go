package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// The headers of a webhook delivery (spec 6.1).
const (
	// HeaderEvent names the event, e.g. "subscriber.created".
	HeaderEvent = "X-RelayBell-Event"
	// HeaderDelivery is the delivery id (a UUID): one per event and
	// webhook, the same on every retry and resend.
	HeaderDelivery = "X-RelayBell-Delivery"
	// HeaderWebhookSignature carries "t=<unix seconds>,v1=<hex HMAC>",
	// the signature a Verifier checks.
	HeaderWebhookSignature = "X-RelayBell-Webhook-Signature"
	// HeaderSignature carries "sha256=<hex HMAC of the body>", the older
	// signature without a timestamp, kept unchanged for old receivers.
	HeaderSignature = "X-RelayBell-Signature"
)

// Sign returns the values of the two signature headers for a delivery
// attempt made at t: webhookSignature for HeaderWebhookSignature,
// "t=<t in unix seconds>,v1=<lowercase hex HMAC-SHA256 of "<t>.<body>">",
// and legacySignature for HeaderSignature,
// "sha256=<lowercase hex HMAC-SHA256 of body>". Both are keyed with the
// whole secret text, "whsec_" prefix included.
//
// body must be the exact bytes sent. Every attempt is signed anew with its
// own t (spec 6.4). An empty secret yields signatures no Verifier accepts.
func Sign(secret string, t time.Time, body []byte) (webhookSignature, legacySignature string) {
	ts := strconv.FormatInt(t.Unix(), 10)
	webhookSignature = "t=" + ts + ",v1=" + hex.EncodeToString(timestampedMAC(secret, ts, body))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	legacySignature = "sha256=" + hex.EncodeToString(mac.Sum(nil))
	return webhookSignature, legacySignature
}

// timestampedMAC is the HMAC-SHA256 of "<ts>.<body>" keyed with secret; ts
// is the timestamp text exactly as it appears in the header.
func timestampedMAC(secret, ts string, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return mac.Sum(nil)
}
