package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
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
	body = bytes.TrimSpace(body)
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

// maxJSONDepth bounds how deeply a body's objects and arrays nest; no
// request of the API needs more than a few levels.
const maxJSONDepth = 32

// checkMembers walks body's tokens beside the Go type it decodes into and
// refuses what encoding/json would let through: member names that match a
// field only without regard to letter case (strict: any unknown name),
// duplicate names, NUL characters, and excessive nesting. Malformed JSON
// is left to the decoder, whose errors name the position.
func checkMembers(body []byte, t reflect.Type, mode decodeMode) *Error {
	c := memberCheck{dec: json.NewDecoder(bytes.NewReader(body)), mode: mode}
	c.dec.UseNumber()
	if err := c.value(t, "", 0); err != errMalformed {
		return err
	}
	return nil
}

type memberCheck struct {
	dec  *json.Decoder
	mode decodeMode
}

// errMalformed stops the walk at malformed JSON; the decoder reports it.
var errMalformed = &Error{}

func (c *memberCheck) value(t reflect.Type, path string, depth int) *Error {
	tok, err := c.dec.Token()
	if err != nil {
		return errMalformed
	}
	switch tok := tok.(type) {
	case json.Delim:
		if depth == maxJSONDepth {
			return errorf(CodeInvalidJSON, "the JSON nests deeper than %d levels", maxJSONDepth)
		}
		t = jsonShape(t)
		if tok == '{' {
			return c.object(t, path, depth+1)
		}
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; c.dec.More(); i++ {
			if err := c.value(elem, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
		if _, err := c.dec.Token(); err != nil {
			return errMalformed
		}
	case string:
		if strings.IndexByte(tok, 0) >= 0 {
			return errorf(CodeInvalidJSON, "field %s holds a NUL character", path)
		}
	}
	return nil
}

func (c *memberCheck) object(t reflect.Type, path string, depth int) *Error {
	var (
		fields map[string]reflect.Type
		elem   reflect.Type
	)
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = structMembers(t)
		case reflect.Map:
			elem = t.Elem()
		}
	}
	seen := map[string]bool{}
	for c.dec.More() {
		tok, err := c.dec.Token()
		if err != nil {
			return errMalformed
		}
		name, _ := tok.(string)
		member := name
		if path != "" {
			member = path + "." + name
		}
		if strings.IndexByte(name, 0) >= 0 {
			return errorf(CodeInvalidJSON, "a member name holds a NUL character")
		}
		if seen[name] {
			return errorf(CodeInvalidJSON, "duplicate field %q", member)
		}
		seen[name] = true
		vt := elem
		if fields != nil {
			ft, ok := fields[name]
			if !ok && (c.mode == strict || foldsToAny(name, fields)) {
				return errorf(CodeUnknownField, "unknown field %q", member)
			}
			vt = ft
		}
		if err := c.value(vt, member, depth); err != nil {
			return err
		}
	}
	if _, err := c.dec.Token(); err != nil {
		return errMalformed
	}
	return nil
}

// foldsToAny reports whether name equals a member name but for letter case.
func foldsToAny(name string, fields map[string]reflect.Type) bool {
	for f := range fields {
		if strings.EqualFold(f, name) {
			return true
		}
	}
	return false
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	shaperType      = reflect.TypeFor[jsonShaper]()
)

// jsonShaper is a type with its own UnmarshalJSON that holds the JSON form
// of another type (notification.Nullable): its members are that type's.
type jsonShaper interface{ JSONShape() reflect.Type }

// jsonShape is the type whose members a JSON value decoded into t has:
// pointers are followed, a jsonShaper is replaced by its shape, and any
// other type with its own UnmarshalJSON gives nil (its members are not
// checked, only its strings, names and depth).
func jsonShape(t reflect.Type) reflect.Type {
	for t != nil {
		switch {
		case t.Kind() == reflect.Pointer:
			t = t.Elem()
		case t.Implements(shaperType):
			t = reflect.Zero(t).Interface().(jsonShaper).JSONShape()
		case reflect.PointerTo(t).Implements(unmarshalerType):
			return nil
		default:
			return t
		}
	}
	return nil
}

// structMembers maps a struct's JSON member names to their types, as
// encoding/json names them (tags, untagged exported fields, embedded
// structs' members promoted).
var structMembersCache sync.Map // reflect.Type -> map[string]reflect.Type

func structMembers(t reflect.Type) map[string]reflect.Type {
	if m, ok := structMembersCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n, mt := range structMembers(ft) {
					if _, ok := m[n]; !ok {
						m[n] = mt
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
	}
	structMembersCache.Store(t, m)
	return m
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
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only a value the code built wrongly can fail to encode.
		buf.Reset()
		buf.WriteString(`{"error":"internal_error"}`)
		status = fasthttp.StatusInternalServerError
	}
	fc.SetStatusCode(status)
	fc.SetContentType("application/json")
	fc.SetBody(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// json answers a handler's success.
func (r *request) json(status int, v any) error {
	writeJSON(r.fc, status, v)
	return nil
}

// noContent answers 204.
func (r *request) noContent() error {
	r.fc.SetStatusCode(fasthttp.StatusNoContent)
	r.fc.Response.ResetBody()
	return nil
}
