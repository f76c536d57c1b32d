package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// ErrProperties is returned for properties that are not a JSON object.
var ErrProperties = errors.New("properties must be a JSON object")

// properties are the members of an event's properties that mean
// something to Track.
type properties map[string]json.RawMessage

// Properties checks an event's properties as posted: a JSON object, or
// none (empty or null, given back as nil). Anything else is ErrProperties.
func Properties(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if _, err := readProperties(raw); err != nil {
		return nil, err
	}
	return raw, nil
}

func readProperties(raw json.RawMessage) (properties, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, ErrProperties
	}
	var p properties
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, ErrProperties
	}
	return p, nil
}

// number is the member as a JSON number, if it is one.
func (p properties) number(key string) (float64, bool) {
	raw := bytes.TrimSpace(p[key])
	if len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil
}

// value is the conversion value: a numeric value, else a numeric revenue.
func (p properties) value() (float64, bool) {
	if v, ok := p.number("value"); ok {
		return v, true
	}
	return p.number("revenue")
}

// text is a string member trimmed, or a number member as written; "" for
// anything else.
func (p properties) text(key string) string {
	raw := bytes.TrimSpace(p[key])
	if _, ok := p.number(key); ok {
		return string(raw)
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// productID is properties.productId (a string, or a number written the
// shortest way, so that 7, 7.0 and 7e0 are one product), cut to
// maxProductID characters; "" when there is none.
func (p properties) productID() string {
	if n, ok := p.number("productId"); ok {
		return strconv.FormatFloat(n, 'f', -1, 64)
	}
	return cutText(p.text("productId"), maxProductID)
}
