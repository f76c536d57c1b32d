package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// maxJSONDepth bounds how deeply a body's objects and arrays nest; no
// request of the API needs more than a few levels.
const maxJSONDepth = 32

// checkMembers scans body beside the Go type it decodes into and refuses
// what encoding/json would let through: member names that match a field
// only without regard to letter case (strict: any unknown name), a member
// named twice in one object, NUL characters in strings, and nesting deeper
// than maxJSONDepth. Malformed JSON is left to the decoder, whose errors
// name the position. It reads the body once, without a tokenizer: the
// browser SDK's pings and registrations go through it.
func checkMembers(body []byte, t reflect.Type, mode decodeMode) *Error {
	c := memberCheck{b: body, mode: mode}
	if err := c.value(t, 0); err != errMalformed {
		return err
	}
	return nil
}

// memberCheck is one scan. path holds the members and indexes down to the
// value being read, for the messages.
type memberCheck struct {
	b    []byte
	i    int
	mode decodeMode
	path []pathStep
}

type pathStep struct {
	name  []byte // an object member, or
	index int    // with name nil, an array element
}

// errMalformed stops the scan at malformed JSON; the decoder reports it.
var errMalformed = &Error{}

func (c *memberCheck) where() string {
	var b strings.Builder
	for _, s := range c.path {
		if s.name == nil {
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(s.name)
	}
	return b.String()
}

func (c *memberCheck) skipSpace() {
	for c.i < len(c.b) && (c.b[c.i] == ' ' || c.b[c.i] == '\t' || c.b[c.i] == '\n' || c.b[c.i] == '\r') {
		c.i++
	}
}

// value scans one value that decodes into t (nil: unknown).
func (c *memberCheck) value(t reflect.Type, depth int) *Error {
	c.skipSpace()
	if c.i == len(c.b) {
		return errMalformed
	}
	switch c.b[c.i] {
	case '{', '[':
		if depth == maxJSONDepth {
			return errorf(CodeInvalidJSON, "the JSON nests deeper than %d levels", maxJSONDepth)
		}
		t = jsonShape(t)
		if c.b[c.i] == '{' {
			return c.object(t, depth+1)
		}
		return c.array(t, depth+1)
	case '"':
		_, hasNUL, ok := c.str()
		switch {
		case !ok:
			return errMalformed
		case hasNUL:
			return errorf(CodeInvalidJSON, "field %s holds a NUL character", c.where())
		}
		return nil
	}
	// A number or a literal: the decoder checks it.
	for ; c.i < len(c.b); c.i++ {
		switch c.b[c.i] {
		case ' ', '\t', '\r', '\n', ',', ']', '}':
			return nil
		}
	}
	return nil
}

func (c *memberCheck) array(t reflect.Type, depth int) *Error {
	c.i++ // [
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	c.skipSpace()
	if c.i < len(c.b) && c.b[c.i] == ']' {
		c.i++
		return nil
	}
	for n := 0; ; n++ {
		c.path = append(c.path, pathStep{index: n})
		if err := c.value(elem, depth); err != nil {
			return err
		}
		c.path = c.path[:len(c.path)-1]
		c.skipSpace()
		if c.i == len(c.b) {
			return errMalformed
		}
		switch c.b[c.i] {
		case ',':
			c.i++
		case ']':
			c.i++
			return nil
		default:
			return errMalformed
		}
	}
}

// seenNames remembers an object's member names: a few in a slice, many in
// a map, so that a hostile object with thousands stays linear.
type seenNames struct {
	few  [][]byte
	many map[string]bool
}

func (s *seenNames) add(name []byte) (dup bool) {
	if s.many != nil {
		if s.many[string(name)] {
			return true
		}
		s.many[string(name)] = true
		return false
	}
	for _, n := range s.few {
		if bytes.Equal(n, name) {
			return true
		}
	}
	s.few = append(s.few, name)
	if len(s.few) == 16 {
		s.many = make(map[string]bool, 32)
		for _, n := range s.few {
			s.many[string(n)] = true
		}
	}
	return false
}

func (c *memberCheck) object(t reflect.Type, depth int) *Error {
	c.i++ // {
	var (
		fields map[string]reflect.Type
		elem   reflect.Type
		seen   seenNames
	)
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = structMembers(t)
		case reflect.Map:
			elem = t.Elem()
		}
	}
	c.skipSpace()
	if c.i < len(c.b) && c.b[c.i] == '}' {
		c.i++
		return nil
	}
	for {
		c.skipSpace()
		if c.i == len(c.b) || c.b[c.i] != '"' {
			return errMalformed
		}
		name, hasNUL, ok := c.str()
		if !ok {
			return errMalformed
		}
		if hasNUL {
			return errorf(CodeInvalidJSON, "a member name holds a NUL character")
		}
		c.path = append(c.path, pathStep{name: name})
		if seen.add(name) {
			return errorf(CodeInvalidJSON, "duplicate field %q", c.where())
		}
		vt := elem
		if fields != nil {
			ft, ok := fields[string(name)]
			if !ok && (c.mode == strict || foldsToAny(string(name), fields)) {
				return errorf(CodeUnknownField, "unknown field %q", c.where())
			}
			vt = ft
		}
		c.skipSpace()
		if c.i == len(c.b) || c.b[c.i] != ':' {
			return errMalformed
		}
		c.i++
		if err := c.value(vt, depth); err != nil {
			return err
		}
		c.path = c.path[:len(c.path)-1]
		c.skipSpace()
		if c.i == len(c.b) {
			return errMalformed
		}
		switch c.b[c.i] {
		case ',':
			c.i++
		case '}':
			c.i++
			return nil
		default:
			return errMalformed
		}
	}
}

// str scans the string at c.i and returns its text: the bytes of the body
// when it has no escape, else decoded. hasNUL reports a NUL, written as it
// is or as \u0000; ok is false for a string that does not end.
func (c *memberCheck) str() (s []byte, hasNUL, ok bool) {
	start := c.i + 1
	escaped := false
	for c.i = start; c.i < len(c.b); c.i++ {
		switch c.b[c.i] {
		case '\\':
			escaped = true
			c.i++ // the escaped byte; \uXXXX's digits are plain bytes
		case '"':
			raw := c.b[start:c.i]
			c.i++
			if !escaped {
				return raw, bytes.IndexByte(raw, 0) >= 0, true
			}
			var text string
			if json.Unmarshal(c.b[start-1:c.i], &text) != nil {
				return nil, false, false
			}
			return []byte(text), strings.IndexByte(text, 0) >= 0, true
		}
	}
	return nil, false, false
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

var shapeCache sync.Map // reflect.Type -> reflect.Type (nil: not checked)

// jsonShape is the type whose members a JSON value decoded into t has:
// pointers are followed, a jsonShaper is replaced by its shape, and any
// other type with its own UnmarshalJSON gives nil (its members are not
// checked, only its strings, names and depth).
func jsonShape(t reflect.Type) reflect.Type {
	if t == nil {
		return nil
	}
	if s, ok := shapeCache.Load(t); ok {
		s, _ := s.(reflect.Type)
		return s
	}
	from := t
	for t != nil {
		switch {
		case t.Kind() == reflect.Pointer:
			t = t.Elem()
			continue
		case t.Implements(shaperType):
			t = reflect.Zero(t).Interface().(jsonShaper).JSONShape()
			continue
		case reflect.PointerTo(t).Implements(unmarshalerType):
			t = nil
		}
		break
	}
	shapeCache.Store(from, t)
	return t
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
