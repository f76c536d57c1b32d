package api

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// specSection7 is the table of spec section 7, copied word for word.
var specSection7 = map[int]string{
	400: "invalid_json, title_required, unknown_field, external_ids_empty, unknown_topic, segment_not_found, invalid_cursor, invalid_status, invalid_range, invalid_tz, invalid_device, invalid_filters, event_required, name_required, segment_needs_a_rule, nothing_to_update, no_subscribers, nothing_to_change, too_many_labels, invalid_label, reserved_label, ids_required, too_many_ids, invalid_id, invalid_url, invalid_scopes, invalid_expiry",
	401: "not_authenticated, invalid_api_key, api_key_expired",
	403: "email_not_verified, account_suspended, insufficient_scope, session_required",
	404: "not_found, not_scheduled",
	409: "too_many_drafts, not_a_draft, segment_in_use, delivery_in_progress, body_too_large",
	413: "draft_too_large, payload_too_large",
	429: "rate_limited, send_limit_reached",
}

func TestCatalogHoldsSection7(t *testing.T) {
	spec := map[string]bool{}
	for status, codes := range specSection7 {
		for _, code := range strings.Split(codes, ", ") {
			spec[code] = true
			got, ok := catalog[code]
			if !ok {
				t.Errorf("%s missing from the catalog", code)
			} else if got != status {
				t.Errorf("%s: status %d, want %d", code, got, status)
			}
		}
	}
	// Codes beyond section 7 are the transport's, or RelayBell's own
	// routes' and features', each described in the OpenAPI document.
	extra := map[string]bool{CodeMethodNotAllowed: true, CodeBadRequest: true, CodeInternal: true}
	for code := range catalog {
		if !spec[code] && !extra[code] && !strings.Contains(string(openAPIDoc), " "+code) {
			t.Errorf("catalog code %s is neither in spec section 7 nor described in openapi.json", code)
		}
	}
}

func TestErrorBodies(t *testing.T) {
	limit, retry := 30, 1200
	f := func(e *Error, status int, want string) {
		t.Helper()
		var fc fasthttp.RequestCtx
		writeError(&fc, "rid", e)
		if fc.Response.StatusCode() != status {
			t.Errorf("%s: status %d, want %d", e.Code, fc.Response.StatusCode(), status)
		}
		if got := string(fc.Response.Body()); got != want {
			t.Errorf("body\n %s\nwant\n %s", got, want)
		}
		if ct := string(fc.Response.Header.ContentType()); ct != "application/json" {
			t.Errorf("content type %q", ct)
		}
	}
	f(errCode(CodeNotFound), 404, `{"error":"not_found","request_id":"rid"}`)
	f(errorf(CodeInvalidJSON, "bad <json> & more"), 400, `{"error":"invalid_json","message":"bad <json> & more","request_id":"rid"}`)
	f(insufficientScope(ScopeSend), 403, `{"error":"insufficient_scope","required":"send","request_id":"rid"}`)
	f(&Error{Code: CodeSendLimitReached, Limit: &limit, Kind: "broadcast", RetryAfter: &retry}, 429,
		`{"error":"send_limit_reached","limit":30,"kind":"broadcast","retryAfter":1200,"request_id":"rid"}`)
	f(&Error{Code: "no_such_code"}, 500, `{"error":"no_such_code","request_id":"rid"}`)
}
