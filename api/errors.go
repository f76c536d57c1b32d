package api

import (
	"fmt"
	"net/http"
)

// Error codes of spec section 7. Clients branch on these; they never change.
const (
	// 400
	CodeInvalidJSON        = "invalid_json"
	CodeTitleRequired      = "title_required"
	CodeUnknownField       = "unknown_field"
	CodeExternalIDsEmpty   = "external_ids_empty"
	CodeUnknownTopic       = "unknown_topic"
	CodeSegmentNotFound    = "segment_not_found"
	CodeInvalidCursor      = "invalid_cursor"
	CodeInvalidStatus      = "invalid_status"
	CodeInvalidRange       = "invalid_range"
	CodeInvalidTZ          = "invalid_tz"
	CodeInvalidDevice      = "invalid_device"
	CodeInvalidFilters     = "invalid_filters"
	CodeEventRequired      = "event_required"
	CodeNameRequired       = "name_required"
	CodeSegmentNeedsARule  = "segment_needs_a_rule"
	CodeNothingToUpdate    = "nothing_to_update"
	CodeNoSubscribers      = "no_subscribers"
	CodeNothingToChange    = "nothing_to_change"
	CodeTooManyLabels      = "too_many_labels"
	CodeInvalidLabel       = "invalid_label"
	CodeReservedLabel      = "reserved_label"
	CodeIDsRequired        = "ids_required"
	CodeTooManyIDs         = "too_many_ids"
	CodeInvalidID          = "invalid_id"
	CodeInvalidURL         = "invalid_url"
	CodeInvalidScopes      = "invalid_scopes"
	CodeInvalidExpiry      = "invalid_expiry"
	CodeNotAuthenticated   = "not_authenticated"
	CodeInvalidAPIKey      = "invalid_api_key"
	CodeAPIKeyExpired      = "api_key_expired"
	CodeEmailNotVerified   = "email_not_verified"
	CodeAccountSuspended   = "account_suspended"
	CodeInsufficientScope  = "insufficient_scope"
	CodeSessionRequired    = "session_required"
	CodeNotFound           = "not_found"
	CodeNotScheduled       = "not_scheduled"
	CodeTooManyDrafts      = "too_many_drafts"
	CodeNotADraft          = "not_a_draft"
	CodeSegmentInUse       = "segment_in_use"
	CodeDeliveryInProgress = "delivery_in_progress"
	CodeBodyTooLarge       = "body_too_large"
	CodeDraftTooLarge      = "draft_too_large"
	CodePayloadTooLarge    = "payload_too_large"
	CodeRateLimited        = "rate_limited"
	CodeSendLimitReached   = "send_limit_reached"
)

// Codes the transport needs that section 7 does not name. They only appear
// for requests no spec route could answer (wrong method, unreadable HTTP) or
// for a fault of the service itself.
const (
	CodeMethodNotAllowed = "method_not_allowed"
	CodeBadRequest       = "bad_request"
	CodeInternal         = "internal_error"
)

// Codes of RelayBell's own routes for people who sign in, and of session
// calls (spec 4.8), which section 7 leaves to the service.
const (
	CodeInvalidEmail       = "invalid_email"
	CodeInvalidPassword    = "invalid_password"
	CodeInvalidName        = "invalid_name"
	CodeInvalidToken       = "invalid_token"
	CodeInvalidRole        = "invalid_role"
	CodeProjectRequired    = "project_required"
	CodeInvalidCredentials = "invalid_credentials"
	CodeWrongPassword      = "wrong_password"
	CodeInsufficientRole   = "insufficient_role"
	CodeCSRFFailed         = "csrf_failed"
	CodeLastOwner          = "last_owner"
)

// Codes of identity verification (GET and PUT /identity, and a browser
// linking an external id), which section 7 leaves to the service.
const (
	CodeInvalidExternalIDHash = "invalid_external_id_hash"
	CodeTooManySecrets        = "too_many_secrets"
	CodeSecretRequired        = "secret_required"
)

// Codes of POST /events that section 7 leaves to the service: a retry
// whose Idempotency-Key's first request is still running after a wait,
// and a key used again with another body.
const (
	CodeIdempotencyInProgress = "idempotency_in_progress"
	CodeIdempotencyKeyReused  = "idempotency_key_reused"
)

// Codes of the commerce platforms' receivers (POST /integrations/...): a
// request not signed with the website's commerce signing secret, and one
// without its platform's delivery id.
const (
	CodeInvalidSignature  = "invalid_signature"
	CodeDeliveryIDMissing = "delivery_id_required"
)

// catalog maps every error code to its HTTP status. It is the only place a
// status is chosen for an error.
var catalog = map[string]int{
	CodeInvalidJSON:       http.StatusBadRequest,
	CodeTitleRequired:     http.StatusBadRequest,
	CodeUnknownField:      http.StatusBadRequest,
	CodeExternalIDsEmpty:  http.StatusBadRequest,
	CodeUnknownTopic:      http.StatusBadRequest,
	CodeSegmentNotFound:   http.StatusBadRequest,
	CodeInvalidCursor:     http.StatusBadRequest,
	CodeInvalidStatus:     http.StatusBadRequest,
	CodeInvalidRange:      http.StatusBadRequest,
	CodeInvalidTZ:         http.StatusBadRequest,
	CodeInvalidDevice:     http.StatusBadRequest,
	CodeInvalidFilters:    http.StatusBadRequest,
	CodeEventRequired:     http.StatusBadRequest,
	CodeNameRequired:      http.StatusBadRequest,
	CodeSegmentNeedsARule: http.StatusBadRequest,
	CodeNothingToUpdate:   http.StatusBadRequest,
	CodeNoSubscribers:     http.StatusBadRequest,
	CodeNothingToChange:   http.StatusBadRequest,
	CodeTooManyLabels:     http.StatusBadRequest,
	CodeInvalidLabel:      http.StatusBadRequest,
	CodeReservedLabel:     http.StatusBadRequest,
	CodeIDsRequired:       http.StatusBadRequest,
	CodeTooManyIDs:        http.StatusBadRequest,
	CodeInvalidID:         http.StatusBadRequest,
	CodeInvalidURL:        http.StatusBadRequest,
	CodeInvalidScopes:     http.StatusBadRequest,
	CodeInvalidExpiry:     http.StatusBadRequest,

	CodeNotAuthenticated: http.StatusUnauthorized,
	CodeInvalidAPIKey:    http.StatusUnauthorized,
	CodeAPIKeyExpired:    http.StatusUnauthorized,

	CodeEmailNotVerified:  http.StatusForbidden,
	CodeAccountSuspended:  http.StatusForbidden,
	CodeInsufficientScope: http.StatusForbidden,
	CodeSessionRequired:   http.StatusForbidden,

	CodeNotFound:     http.StatusNotFound,
	CodeNotScheduled: http.StatusNotFound,

	CodeTooManyDrafts:      http.StatusConflict,
	CodeNotADraft:          http.StatusConflict,
	CodeSegmentInUse:       http.StatusConflict,
	CodeDeliveryInProgress: http.StatusConflict,
	CodeBodyTooLarge:       http.StatusConflict,

	CodeDraftTooLarge:   http.StatusRequestEntityTooLarge,
	CodePayloadTooLarge: http.StatusRequestEntityTooLarge,

	CodeRateLimited:      http.StatusTooManyRequests,
	CodeSendLimitReached: http.StatusTooManyRequests,

	CodeInvalidEmail:       http.StatusBadRequest,
	CodeInvalidPassword:    http.StatusBadRequest,
	CodeInvalidName:        http.StatusBadRequest,
	CodeInvalidToken:       http.StatusBadRequest,
	CodeInvalidRole:        http.StatusBadRequest,
	CodeProjectRequired:    http.StatusBadRequest,
	CodeInvalidCredentials: http.StatusUnauthorized,
	CodeWrongPassword:      http.StatusForbidden,
	CodeInsufficientRole:   http.StatusForbidden,
	CodeCSRFFailed:         http.StatusForbidden,
	CodeLastOwner:          http.StatusConflict,

	CodeInvalidExternalIDHash: http.StatusForbidden,
	CodeTooManySecrets:        http.StatusConflict,
	CodeSecretRequired:        http.StatusConflict,

	CodeInvalidFrequency:  http.StatusBadRequest,
	CodeInvalidDay:        http.StatusBadRequest,
	CodeInvalidHour:       http.StatusBadRequest,
	CodeInvalidRecipients: http.StatusBadRequest,
	CodeInvalidTarget:     http.StatusBadRequest,
	CodeNoRecipients:      http.StatusConflict,

	CodeIdempotencyInProgress: http.StatusConflict,
	CodeIdempotencyKeyReused:  http.StatusConflict,
	CodeInvalidSignature:      http.StatusUnauthorized,
	CodeDeliveryIDMissing:     http.StatusBadRequest,

	CodeEndpointRequired:    http.StatusBadRequest,
	CodeUnknownEndpoint:     http.StatusBadRequest,
	CodeTestSendNotTargeted: http.StatusBadRequest,
	CodeTooManyTestDevices:  http.StatusConflict,
	CodeNoTestDevices:       http.StatusConflict,

	CodeInvalidTrigger:    http.StatusBadRequest,
	CodeInvalidStopEvents: http.StatusBadRequest,
	CodeInvalidMessages:   http.StatusBadRequest,
	CodeInvalidCaps:       http.StatusBadRequest,

	CodeInvalidGoal:         http.StatusBadRequest,
	CodeInvalidWindow:       http.StatusBadRequest,
	CodeInvalidGraph:        http.StatusBadRequest,
	CodeInvalidEntry:        http.StatusBadRequest,
	CodeInvalidReentry:      http.StatusBadRequest,
	CodeInvalidExitEvents:   http.StatusBadRequest,
	CodeGoalNotFound:        http.StatusBadRequest,
	CodeTemplateNotFound:    http.StatusBadRequest,
	CodeInvalidActions:      http.StatusBadRequest,
	CodeInvalidTranslations: http.StatusBadRequest,
	CodeTemplateInUse:       http.StatusConflict,
	CodeTooManyTemplates:    http.StatusConflict,
	CodeUnmappedStep:        http.StatusBadRequest,
	CodePersonRequired:      http.StatusBadRequest,
	CodeAlreadyEnrolled:     http.StatusConflict,
	CodeJourneyNotActive:    http.StatusConflict,

	CodeNotAnImage:     http.StatusBadRequest,
	CodeImageTooLarge:  http.StatusBadRequest,
	CodeFileRequired:   http.StatusBadRequest,
	CodeUploadNotFound: http.StatusBadRequest,
	CodeInvalidLogo:    http.StatusBadRequest,
	CodeInvalidTone:    http.StatusBadRequest,
	CodeTextTooLong:    http.StatusBadRequest,

	CodeInvalidRule:     http.StatusBadRequest,
	CodeInvalidAudience: http.StatusBadRequest,
	CodeInvalidSchedule: http.StatusBadRequest,

	CodeInvalidPrompt:         http.StatusBadRequest,
	CodeInvalidWelcome:        http.StatusBadRequest,
	CodeInvalidOnsiteMessage:  http.StatusBadRequest,
	CodeTooManyOnsiteMessages: http.StatusConflict,

	CodeInvalidTemplate:     http.StatusBadRequest,
	CodeInvalidPollMinutes:  http.StatusBadRequest,
	CodeInvalidMaxPerPoll:   http.StatusBadRequest,
	CodeInvalidSendExisting: http.StatusBadRequest,
	CodePollInProgress:      http.StatusConflict,
	CodeFeedPaused:          http.StatusConflict,

	CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	CodeBadRequest:       http.StatusBadRequest,
	CodeInternal:         http.StatusInternalServerError,
}

// Error is an API error: one code of the catalog plus the optional members
// section 7 lets it carry. The writer adds request_id.
type Error struct {
	Code    string `json:"error"`
	Message string `json:"message,omitempty"`
	// Required is the scope an insufficient_scope call lacked, or the
	// role an insufficient_role one did.
	Required string `json:"required,omitempty"`
	// Limit, Kind and RetryAfter describe a send_limit_reached.
	Limit      *int   `json:"limit,omitempty"`
	Kind       string `json:"kind,omitempty"`
	RetryAfter *int   `json:"retryAfter,omitempty"`
	// Feeds, Schedules and Pending count what holds a segment_in_use.
	Feeds     *int64 `json:"feeds,omitempty"`
	Schedules *int64 `json:"schedules,omitempty"`
	Pending   *int64 `json:"pending,omitempty"`
	// Step names the journey step an invalid_graph (or a step's content
	// error, or an unmapped_step) is about.
	Step string `json:"step,omitempty"`
	// UsedBy names what holds a template_in_use: each automation and
	// journey that names the template, as {kind, id, name}.
	UsedBy []templateUseJSON `json:"usedBy,omitempty"`
}

// Status is the HTTP status of the error's code; a code missing from the
// catalog is a programming error and answers 500.
func (e *Error) Status() int {
	if s, ok := catalog[e.Code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// errorf builds an error of the catalog with a message.
func errorf(code, format string, args ...any) *Error {
	if len(args) == 0 {
		return &Error{Code: code, Message: format}
	}
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// errCode builds an error of the catalog without a message.
func errCode(code string) *Error { return &Error{Code: code} }

// insufficientScope is the 403 of spec 5, rule 3.
func insufficientScope(scope string) *Error {
	return &Error{Code: CodeInsufficientScope, Required: scope}
}

// errorBody is what goes on the wire.
type errorBody struct {
	*Error
	RequestID string `json:"request_id"`
}
