package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Value is a rule value: a string or a list of strings in JSON (spec 2.2).
//
// Numbers and booleans are accepted and kept as their JSON text ("compared as
// text": 1.50 stays "1.50", true becomes "true"), at the top level and inside
// a list. null and an absent value are the zero Value, which holds nothing; a
// null inside a list is kept as an empty element. Objects and nested lists are
// refused.
//
// A Value marshals back as a string when it held one scalar, as an array when
// it was a list (even an empty one), and as null when it holds nothing.
//
// For matching, only the non-empty elements count: a Value with none (zero,
// "", [], [""]) is "no value", which makes a rule that needs one incomplete.
type Value struct {
	items []string
	list  bool
}

// Text returns a scalar Value holding s.
func Text(s string) Value { return Value{items: []string{s}} }

// List returns a list Value holding ss (an empty list when ss is empty).
func List(ss ...string) Value {
	items := make([]string, len(ss))
	copy(items, ss)
	return Value{items: items, list: true}
}

// IsList reports whether the value was written as a list.
func (v Value) IsList() bool { return v.list }

// IsZero reports whether the value holds nothing (JSON null or absent). It
// lets the `omitzero` option leave an absent value out of a Rule.
func (v Value) IsZero() bool { return !v.list && len(v.items) == 0 }

// Strings returns the elements as written: one for a scalar, all of them for
// a list, none for the zero Value. The caller must not modify the result.
func (v Value) Strings() []string { return v.items }

// hasText reports whether at least one element is non-empty.
func (v Value) hasText() bool {
	for _, s := range v.items {
		if s != "" {
			return true
		}
	}
	return false
}

// MarshalJSON writes a string for a scalar, an array for a list and null for
// the zero Value.
func (v Value) MarshalJSON() ([]byte, error) {
	switch {
	case v.list:
		if v.items == nil {
			return []byte("[]"), nil
		}
		return json.Marshal(v.items)
	case len(v.items) == 0:
		return []byte("null"), nil
	default:
		return json.Marshal(v.items[0])
	}
}

var errValueType = errors.New("a rule value must be a string, number, boolean, null or a list of those")

// UnmarshalJSON accepts a string, number, boolean, null, or an array of those.
func (v *Value) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return errValueType
	}
	if data[0] != '[' {
		s, isNull, err := scalarText(data)
		if err != nil {
			return err
		}
		if isNull {
			*v = Value{}
			return nil
		}
		*v = Value{items: []string{s}}
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("decoding rule value: %w", err)
	}
	items := make([]string, len(raw))
	for i, r := range raw {
		s, _, err := scalarText(r)
		if err != nil {
			return err
		}
		items[i] = s
	}
	*v = Value{items: items, list: true}
	return nil
}

// scalarText turns one JSON scalar into its text. null gives "" and isNull.
func scalarText(data []byte) (s string, isNull bool, err error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "", false, errValueType
	}
	switch c := data[0]; {
	case c == '"':
		if err := json.Unmarshal(data, &s); err != nil {
			return "", false, fmt.Errorf("decoding rule value: %w", err)
		}
		return s, false, nil
	case c == 'n':
		if string(data) != "null" {
			return "", false, errValueType
		}
		return "", true, nil
	case c == 't', c == 'f', c == '-', c >= '0' && c <= '9':
		// A number or boolean: its JSON text is the value. encoding/json
		// has checked it already, unless UnmarshalJSON was called directly.
		if !json.Valid(data) {
			return "", false, errValueType
		}
		return string(data), false, nil
	default:
		return "", false, errValueType
	}
}
