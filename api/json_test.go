package api

import (
	"testing"

	"github.com/valyala/fasthttp"
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
	f("{\"name\":\"\xff\"}", strict, "", "") // invalid UTF-8 is replaced, as encoding/json does
}

func TestWriteJSONKeepsURLsReadable(t *testing.T) {
	var fc fasthttp.RequestCtx
	writeJSON(&fc, 200, map[string]string{"url": "https://a.example/?a=1&b=<2>"})
	if got := string(fc.Response.Body()); got != `{"url":"https://a.example/?a=1&b=<2>"}` {
		t.Errorf("%s", got)
	}
}
