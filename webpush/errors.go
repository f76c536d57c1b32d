package webpush

import "errors"

// Errors callers branch on. Functions wrap them with detail; test with errors.Is.
var (
	// ErrInvalidKey: a VAPID key is not a valid P-256 key in base64.
	ErrInvalidKey = errors.New("webpush: invalid VAPID key")

	// ErrInvalidSubscription: the endpoint, p256dh or auth of a subscription
	// cannot be used. The subscription will never work; drop it.
	ErrInvalidSubscription = errors.New("webpush: invalid subscription")

	// ErrPayloadTooLarge: the payload is longer than MaxPayloadSize.
	ErrPayloadTooLarge = errors.New("webpush: payload too large")

	// ErrInvalidMessage: a Message field (TTL, Urgency, Topic) is out of range.
	ErrInvalidMessage = errors.New("webpush: invalid message")

	// ErrInvalidSubject: the VAPID subject is neither a mailto: nor an https: URI.
	ErrInvalidSubject = errors.New("webpush: invalid VAPID subject")
)
