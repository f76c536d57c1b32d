// Package notification owns the send request of spec 2.1: strict decoding,
// validation with the spec's error codes, resolution against the website's
// defaults (url with UTM tags, icon, ttl), the stored Content and Target, the
// push payload a browser receives, and the JSON shapes of spec 2.3 and 2.4.
//
// Merge tags. Title, body and url of a send may hold {name} or
// {name|fallback}; Payload replaces them per recipient after the A/B variant
// and the translation are chosen:
//   - name is 1 to 64 ASCII letters, digits, '_', '-', '.' or ':'. Braces
//     around anything else ({"a":1}, { }, {}) and lone or unmatched braces
//     are text, left exactly as written. Tags do not nest.
//   - The fallback is literal text up to the closing '}': it may be empty
//     and may contain spaces, but not '{' or '}'.
//   - external_id (or externalId), country, language, timezone, device (of
//     the endpoint) and subscriber_id are subscriber attributes, matched
//     case-insensitively. Any other name is the subscriber's tag with exactly
//     that key, else one whose key matches case-insensitively (the smallest
//     such key).
//   - An unknown name or an empty value gives the fallback ("" without one).
//   - In the url a subscriber's value is query-escaped (url.QueryEscape) so
//     it cannot break the link; the fallback goes in as written. In title
//     and body values go in as they are.
//
// Text without '{' is returned as is, without allocating (mergeTags).
//
// At the door (Prepare, for every send but a draft): each link member must
// be blank or an absolute http(s) URL, the url members with their merge
// tags at the fallbacks (400 invalid_url), and every browser's payload,
// tags at their fallbacks, must fit one push, MaxPayload bytes (413
// payload_too_large naming the longest member). At push time
// (PushPayload) a person's own values that overflow are cut to fit.
// PayloadEncoder gives the same bytes for many browsers of one send: the
// JSON is encoded once per variant and merged texts, and each browser's
// copy is that with its endpoint id spliced in (TestPayloadEncoderIsPushPayload,
// FuzzPayloadEncoder check it against PushPayload byte for byte).
//
// It is pure: no I/O except through the small Lookup interface that
// validation uses to check segment and topic ids. Roles (api, fanout,
// pusher) share it so that a send means the same thing everywhere.
package notification
