package api

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/relaybell/relaybell/notification"
)

// FuzzDecodeJSON checks the strict decoder never panics, only ever answers
// the two codes it may, and accepts nothing encoding/json refuses, nor
// invalid UTF-8 or a NUL. (FuzzRobustness sends such bodies to every route.)
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"name":1}`, `{"a":`, `[]`, `{"name":"x"} x`, "\x00", `{"scopes":[1]}`,
		`{"title":"x","actions":[{"TITLE":"y"}]}`, `{"filters":{"rules":[{"field":"a","value":["b",1]}]},"externalIds":null}`,
		`{"n\u0061me":"a","name":"b"}`, "{\"title\":\"\xff\"}", `{"title":"\u0000"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var v keyRequest
		if err := decodeJSON([]byte(body), &v, strict); err != nil && err.Code != CodeInvalidJSON && err.Code != CodeUnknownField {
			t.Fatalf("%q: %v", body, err)
		}
		var req notification.Request
		if err := decodeJSON([]byte(body), &req, strict); err == nil {
			if !utf8.ValidString(body) || strings.Contains(body, "\x00") {
				t.Fatalf("%q: accepted invalid UTF-8 or a NUL", body)
			}
			var again notification.Request
			if err := json.Unmarshal([]byte(body), &again); err != nil {
				t.Fatalf("%q: accepted, but encoding/json refuses it: %v", body, err)
			}
		} else if err.Code != CodeInvalidJSON && err.Code != CodeUnknownField {
			t.Fatalf("%q: %v", body, err)
		}
	})
}
