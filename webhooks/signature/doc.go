// Package signature signs RelayBell's outbound webhook requests and
// verifies them on the receiving side (spec 6.1 and 6.3). RelayBell's
// delivery engine calls Sign; customers import the package, which depends
// on the standard library only, and use a Verifier.
//
// Every delivery is a POST with a JSON body and the headers HeaderEvent,
// HeaderDelivery, HeaderWebhookSignature ("t=<unix seconds>,v1=<hex>", the
// HMAC-SHA256 of "<t>.<raw body>") and HeaderSignature (the older
// "sha256=<hex>" of the body alone). Both HMACs are keyed with the whole
// webhook secret, "whsec_" prefix included.
//
// A receiver verifies each request before it trusts the body, and answers
// within 10 seconds with a 2xx status; anything else is retried with the
// same body and delivery id and a new timestamp (spec 6.4):
//
//	verifier := &signature.Verifier{
//		Secret: os.Getenv("RELAYBELL_WEBHOOK_SECRET"), // whsec_…
//		Seen:   signature.NewMemorySeen(0, 0),
//	}
//	http.HandleFunc("POST /relaybell", func(w http.ResponseWriter, r *http.Request) {
//		body, err := verifier.VerifyRequest(r)
//		switch {
//		case errors.Is(err, signature.ErrDuplicate):
//			w.WriteHeader(http.StatusNoContent) // handled before: stop the retries
//			return
//		case errors.Is(err, signature.ErrBodyTooLarge):
//			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
//			return
//		case err != nil:
//			log.Printf("relaybell webhook refused: %v", err)
//			http.Error(w, "invalid signature", http.StatusUnauthorized)
//			return
//		}
//		if err := handle(r.Context(), r.Header.Get(signature.HeaderEvent), body); err != nil {
//			// Not handled after all: let RelayBell's retry through.
//			verifier.Seen.Forget(r.Header.Get(signature.HeaderDelivery))
//			http.Error(w, "try again", http.StatusServiceUnavailable)
//			return
//		}
//		w.WriteHeader(http.StatusNoContent)
//	})
//
// Deduplication (Verifier.Seen) is for RelayBell's retries, not a security
// boundary: the delivery id is not covered by the signature, so within the
// tolerance a captured request could be replayed under another id, and
// MemorySeen forgets on restart and is not shared between processes.
// Handlers should still be idempotent; an event may also arrive more than
// once or out of order (spec 6.4).
//
// The package owns the header names, the signature format, and the order
// and meaning of the verification rules. It must never:
//   - fall back to the legacy HeaderSignature when verifying: it has no
//     timestamp, so accepting it would allow replays at any time;
//   - compare signatures other than in constant time, or decode and
//     re-encode a body before computing its HMAC;
//   - log, keep or quote secrets, signature values or bodies, in errors
//     or anywhere else;
//   - hold package-level state, or import anything outside the standard
//     library.
package signature
