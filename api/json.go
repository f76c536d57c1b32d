package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fasthttp"
)

// decodeMode says how a body's members the target does not name are treated.
type decodeMode int

const (
	// lenient ignores members it does not know (browser SDK routes, so an
	// older server accepts a newer SDK).
	lenient decodeMode = iota
	// strict answers them with 400 unknown_field (spec 2.1, admin API).
	strict
)

// decodeJSON decodes a body that must be one JSON object into v. Malformed
// JSON, another top-level value, trailing data, a member of the wrong type,
// invalid UTF-8 (RFC 8259 section 8.1), a NUL character in a string, a
// member named twice in one object, or nesting deeper than maxJSONDepth
// answer 400 invalid_json. Member names match exactly: in strict mode any
// other member, at any depth, answers 400 unknown_field; in lenient mode an
// unknown member is ignored, but one that differs from a known member only
// in letter case still answers unknown_field (encoding/json alone would take
// it for the known one).
func decodeJSON(body []byte, v any, mode decodeMode) *Error {
	body = bytes.Trim(body, " \t\r\n") // JSON white space only (RFC 8259 section 2)
	if len(body) == 0 {
		return errorf(CodeInvalidJSON, "a JSON object body is required")
	}
	if body[0] != '{' {
		return errorf(CodeInvalidJSON, "the body must be a JSON object")
	}
	if !utf8.Valid(body) {
		return errorf(CodeInvalidJSON, "the body is not valid UTF-8")
	}
	if err := checkMembers(body, reflect.TypeOf(v), mode); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if mode == strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errorf(CodeInvalidJSON, "unexpected data after the JSON object")
	}
	return nil
}

// jsonError turns an encoding/json error into the catalog's code.
func jsonError(err error) *Error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return errorf(CodeUnknownField, "unknown field %s", name)
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field == "" {
			return errorf(CodeInvalidJSON, "the body must be a JSON object")
		}
		return errorf(CodeInvalidJSON, "field %s has the wrong type (%s)", typeErr.Field, typeErr.Value)
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return errorf(CodeInvalidJSON, "malformed JSON at byte %d", syntaxErr.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errorf(CodeInvalidJSON, "the JSON ends too early")
	}
	return errorf(CodeInvalidJSON, "%s", strings.TrimPrefix(msg, "json: "))
}

// writeJSON answers status with v encoded as JSON.
func writeJSON(fc *fasthttp.RequestCtx, status int, v any) {
	body, err := encodeJSON(v)
	if err != nil {
		// Only a value the code built wrongly can fail to encode.
		body, status = []byte(`{"error":"internal_error"}`), fasthttp.StatusInternalServerError
	}
	fc.SetStatusCode(status)
	fc.SetContentType("application/json")
	fc.SetBody(body)
}

// encodeJSON is v as every answer writes it: no HTML escaping, no newline.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// rawJSON answers a body already encoded (encodeJSON).
func (r *request) rawJSON(status int, body []byte) error {
	r.fc.SetStatusCode(status)
	r.fc.SetContentType("application/json")
	r.fc.SetBody(body)
	return nil
}

// json answers a handler's success.
func (r *request) json(status int, v any) error {
	writeJSON(r.fc, status, v)
	return nil
}

// answerList answers 200 {key: [...]}: each of a list's records as out
// renders it, the form of every GET list of a website's records (spec
// 4.3, 4.4). A render that cannot fail goes in through always.
func answerList[T, J any](r *request, key string, records []T, out func(T) (J, error)) error {
	v := make([]J, len(records))
	for i, rec := range records {
		var err error
		if v[i], err = out(rec); err != nil {
			return err
		}
	}
	return r.json(fasthttp.StatusOK, map[string]any{key: v})
}

// answerOwn answers one of the website's records, the route's id
// parameter (loadOwn: 404 for none, or another website's), rendered by out.
func answerOwn[T, J any](r *request, load func(ctx context.Context, websiteID, id string) (T, error), out func(T) (J, error)) error {
	rec, err := loadOwn(r, "id", load)
	if err != nil {
		return err
	}
	v, err := out(rec)
	if err != nil {
		return err
	}
	return r.json(fasthttp.StatusOK, v)
}

// always is a render that cannot fail, as answerList and answerOwn take it.
func always[T, J any](out func(T) J) func(T) (J, error) {
	return func(rec T) (J, error) { return out(rec), nil }
}

// noContent answers 204.
func (r *request) noContent() error {
	r.fc.SetStatusCode(fasthttp.StatusNoContent)
	r.fc.Response.ResetBody()
	return nil
}
