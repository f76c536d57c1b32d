// Package notification owns the send request of spec 2.1: strict decoding,
// validation with the spec's error codes, resolution against the website's
// defaults (url with UTM tags, icon, ttl), the stored Content and Target, the
// push payload a browser receives, and the JSON shapes of spec 2.3 and 2.4.
//
// It is pure: no I/O except through the small Lookup interface that
// validation uses to check segment and topic ids. Roles (api, fanout,
// pusher) share it so that a send means the same thing everywhere.
package notification
