package api

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/relaybell/relaybell/notification"
)

func TestDecodeJSON(t *testing.T) {
	type target struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
		N      int      `json:"n"`
	}
	f := func(body string, mode decodeMode, code, msg string) {
		t.Helper()
		var v target
		err := decodeJSON([]byte(body), &v, mode)
		switch {
		case code == "" && err != nil:
			t.Errorf("%q: %v", body, err)
		case code != "" && (err == nil || err.Code != code || err.Message != msg):
			t.Errorf("%q: %v, want %s: %s", body, err, code, msg)
		}
	}
	f(`{"name":"a","scopes":["x"],"n":1}`, strict, "", "")
	f(" \n{}\n ", strict, "", "")
	f(`{"other":1}`, lenient, "", "")
	f(`{"other":1}`, strict, "unknown_field", `unknown field "other"`)
	f(``, strict, "invalid_json", "a JSON object body is required")
	f(`null`, strict, "invalid_json", "the body must be a JSON object")
	f(`[{}]`, strict, "invalid_json", "the body must be a JSON object")
	f(`{"name":1}`, strict, "invalid_json", "field name has the wrong type (number)")
	f(`{"scopes":"full"}`, strict, "invalid_json", "field scopes has the wrong type (string)")
	f(`{"n":1.5}`, strict, "invalid_json", "field n has the wrong type (number 1.5)")
	f(`{"name":"a"`, strict, "invalid_json", "the JSON ends too early")
	f(`{"name":"a",}`, strict, "invalid_json", "malformed JSON at byte 13")
	f(`{"name":"a"}{"name":"b"}`, strict, "invalid_json", "unexpected data after the JSON object")
	// Invalid UTF-8 is invalid JSON (RFC 8259 section 8.1), in either mode;
	// encoding/json alone would store U+FFFD instead.
	f("{\"name\":\"\xff\"}", strict, "invalid_json", "the body is not valid UTF-8")
	f("{\"other\":\"a\xc3\"}", lenient, "invalid_json", "the body is not valid UTF-8")
	// Member names match exactly: encoding/json alone ignores letter case.
	f(`{"NAME":"a"}`, strict, "unknown_field", `unknown field "NAME"`)
	f(`{"Name":"a"}`, lenient, "unknown_field", `unknown field "Name"`)
	f(`{"\u212aey":1}`, lenient, "", "")                                   // no member is called key
	f(`{"ſcopes":[]}`, lenient, "unknown_field", `unknown field "ſcopes"`) // long s folds to s
	f(`{"name":"a","name":"b"}`, lenient, "invalid_json", `duplicate field "name"`)
	f(`{"other":{"x":1,"x":2}}`, lenient, "invalid_json", `duplicate field "other.x"`)
	f(`{"name":"a\u0000b"}`, strict, "invalid_json", "field name holds a NUL character")
	f(`{"scopes":["a","\u0000"]}`, strict, "invalid_json", "field scopes[1] holds a NUL character")
	f(`{"a\u0000":1}`, lenient, "invalid_json", "a member name holds a NUL character")
	f(`{"other":`+strings.Repeat("[", 40)+strings.Repeat("]", 40)+`}`, lenient, "invalid_json", "the JSON nests deeper than 32 levels")
	f(`{"other":`+strings.Repeat("[", 10000)+strings.Repeat("]", 10000)+`}`, lenient, "invalid_json", "the JSON nests deeper than 32 levels")
	f(`{"other":`+strings.Repeat("[", 10000)+`}`, lenient, "invalid_json", "the JSON nests deeper than 32 levels")
	// Escapes are read as the decoder reads them.
	f(`{"\u004eAME":"a"}`, strict, "unknown_field", `unknown field "NAME"`)
	f(`{"n\u0061me":"a","name":"b"}`, lenient, "invalid_json", `duplicate field "name"`)
	f(`{"name":"a \"quoted\" \\ \u00fc","scopes":[ ],"n" : 1 }`, strict, "", "")
	f(`{"other":{}, "more":[[],{},[{"x":[1,"\u0000"]}]]}`, lenient, "invalid_json", "field more[2][0].x[1] holds a NUL character")
	f(`{"other":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"c":18}}`,
		lenient, "invalid_json", `duplicate field "other.c"`)
	f(`{"name":"a`, strict, "invalid_json", "the JSON ends too early")
	f(`{"name" "a"}`, strict, "invalid_json", "malformed JSON at byte 9")
	f(`{"n":1e999}`, strict, "invalid_json", "field n has the wrong type (number 1e999)")
	f(`{"n":123456789012345678901234567890}`, strict, "invalid_json", "field n has the wrong type (number 123456789012345678901234567890)")
}

// TestDecodeJSONNested: exact names, at every depth, through maps, slices,
// pointers, embedded structs and notification.Nullable.
func TestDecodeJSONNested(t *testing.T) {
	f := func(body, code, msg string) {
		t.Helper()
		var v notification.Request
		err := decodeJSON([]byte(body), &v, strict)
		switch {
		case code == "" && err != nil:
			t.Errorf("%s: %v", body, err)
		case code != "" && (err == nil || err.Code != code || err.Message != msg):
			t.Errorf("%s: %v, want %s: %s", body, err, code, msg)
		}
	}
	f(`{"title":"x","actions":[{"title":"a"},{"TITLE":"b"}]}`, "unknown_field", `unknown field "actions[1].TITLE"`)
	f(`{"title":"x","ab":{"b":{"Title":"b"}}}`, "unknown_field", `unknown field "ab.b.Title"`)
	f(`{"title":"x","translations":{"DE":{"title":"a","Body":"b"}}}`, "unknown_field", `unknown field "translations.DE.Body"`)
	f(`{"title":"x","filters":{"rules":[{"FIELD":"country","value":"DE"}]}}`, "unknown_field", `unknown field "filters.rules[0].FIELD"`)
	f(`{"title":"x","excludeFilters":{"Match":"any","rules":[]}}`, "unknown_field", `unknown field "excludeFilters.Match"`)
	f(`{"title":"x","filters":null,"externalIds":null}`, "", "")
	f(`{"title":"x","filters":{"rules":[{"field":"tag:a","value":["x",1,true,null]}]}}`, "", "")
	f(`{"title":"x","sendAt":{"a":1,"a":2}}`, "invalid_json", `duplicate field "sendAt.a"`)
}

func TestWriteJSONKeepsURLsReadable(t *testing.T) {
	var fc fasthttp.RequestCtx
	writeJSON(&fc, 200, map[string]string{"url": "https://a.example/?a=1&b=<2>"})
	if got := string(fc.Response.Body()); got != `{"url":"https://a.example/?a=1&b=<2>"}` {
		t.Errorf("%s", got)
	}
}
