package api

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"mime/multipart"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// Uploads and the logo (issue 36, items 3 and 4): the routes with exact
// codes, the files served, the refusals of what is not an image or too
// many pixels, metadata stripped, and spec 8.1's 60 an hour per address.

// doBytes runs one request with a body of its own content type.
func (h *harness) doBytes(method, uri, contentType string, body []byte, headers ...string) response {
	h.t.Helper()
	var req fasthttp.Request
	req.Header.SetMethod(method)
	req.SetRequestURI(uri)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	req.SetBody(body)
	if contentType != "" {
		req.Header.SetContentType(contentType)
	}
	var fc fasthttp.RequestCtx
	fc.Init(&req, &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 4444}, nil)
	h.api.Handler()(&fc)
	out := response{status: fc.Response.StatusCode(), header: map[string]string{}, body: bytes.Clone(fc.Response.Body())}
	for k, v := range fc.Response.Header.All() {
		out.header[string(k)] = string(v)
	}
	return out
}

func pixels(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{uint8(x * 3), uint8(y * 5), 200, 255})
		}
	}
	return img
}

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, pixels(w, h)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, pixels(w, h), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pngBomb is a valid PNG header declaring w x h pixels with one empty
// IDAT: about 60 bytes.
func pngBomb(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(data)))
		b.Write(n[:])
		b.WriteString(typ)
		b.Write(data)
		binary.BigEndian.PutUint32(n[:], crc32.ChecksumIEEE(append([]byte(typ), data...)))
		b.Write(n[:])
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	chunk("IEND", nil)
	return b.Bytes()
}

// jpegWithGPS is a JPEG with an APP1 Exif segment whose IFD0 points to a
// GPS IFD holding a latitude reference 'N' and a latitude.
func jpegWithGPS(t *testing.T) []byte {
	t.Helper()
	// TIFF header (little endian), IFD0 with one entry: GPSInfo (0x8825)
	// at offset 26; the GPS IFD with GPSLatitudeRef (1) = "N".
	tiff := []byte("II*\x00\x08\x00\x00\x00")
	tiff = append(tiff, 1, 0, 0x25, 0x88, 4, 0, 1, 0, 0, 0, 26, 0, 0, 0, 0, 0, 0, 0)
	tiff = append(tiff, 1, 0, 1, 0, 2, 0, 2, 0, 0, 0, 'N', 0, 0, 0, 0, 0, 0, 0)
	tiff = append(tiff, []byte("GPS 48.8584 N 2.2945 E")...)
	seg := append([]byte("Exif\x00\x00"), tiff...)
	jpg := jpegOf(t, 320, 240)
	out := append([]byte{0xff, 0xd8, 0xff, 0xe1, byte((len(seg) + 2) >> 8), byte(len(seg) + 2)}, seg...)
	out = append(out, jpg[2:]...)
	if _, err := jpeg.Decode(bytes.NewReader(out)); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	if !bytes.Contains(out, []byte("Exif")) || !bytes.Contains(out, []byte("48.8584")) {
		t.Fatal("fixture lacks its metadata")
	}
	return out
}

func multipartBody(t *testing.T, field, declared string, data []byte) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	w, err := mw.CreatePart(map[string][]string{
		"Content-Disposition": {fmt.Sprintf(`form-data; name=%q; filename="logo.jpg"`, field)},
		"Content-Type":        {declared},
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

// fetch reads a served file and checks its headers.
func (h *harness) fetch(t *testing.T, url, wantType string) []byte {
	t.Helper()
	r := h.do("GET", url, "")
	if r.status != 200 || r.header["Content-Type"] != wantType || r.header["X-Content-Type-Options"] != "nosniff" ||
		r.header["Cache-Control"] != "public, max-age=31536000, immutable" {
		t.Fatalf("GET %s: %d %v", url, r.status, r.header)
	}
	return r.body
}

func TestUploadRoutes(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.RateSync = -1 }) // the counts stay out of the store dump
	key := auth(h.site.APIKey)
	// A PNG declared as a JPEG, as the raw body: the bytes decide.
	r := h.doBytes("POST", "/api/v1/upload", "image/jpeg", pngOf(t, 300, 200), key...)
	if r.status != 201 {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	base := "http:///api/v1/uploads/" + id // the harness's request has no Host
	want := fmt.Sprintf(`{"id":%q,"url":"%s/full","type":"image/png","width":300,"height":200,"sizes":{"icon":"%s/icon","image":"%s/image"}}`,
		id, base, base, base)
	if string(r.body) != want {
		t.Fatalf("POST:\n %s\nwant\n %s", r.body, want)
	}
	for name, c := range map[string]struct {
		typ  string
		w, h int
	}{"full": {"image/png", 300, 200}, "icon": {"image/png", 192, 192}, "image": {"image/jpeg", 1024, 512}} {
		body := h.fetch(t, "/api/v1/uploads/"+id+"/"+name, c.typ)
		cfg, _, err := image.DecodeConfig(bytes.NewReader(body))
		if err != nil || cfg.Width != c.w || cfg.Height != c.h {
			t.Fatalf("%s: %v %dx%d, want %dx%d", name, err, cfg.Width, cfg.Height, c.w, c.h)
		}
	}
	// A cached copy is answered 304.
	if r := h.do("GET", "/api/v1/uploads/"+id+"/icon", "", "If-None-Match", `"`+id+`-icon"`); r.status != 304 {
		t.Fatalf("If-None-Match: %d", r.status)
	}

	// A multipart file field, a JPEG with GPS metadata: stripped from every file.
	ct, body := multipartBody(t, "file", "image/png", jpegWithGPS(t))
	r = h.doBytes("POST", "/api/v1/upload", ct, body, key...)
	if r.status != 201 || r.json(t)["type"] != "image/jpeg" || r.json(t)["width"] != 320.0 || r.json(t)["height"] != 240.0 {
		t.Fatalf("multipart: %d %s", r.status, r.body)
	}
	gps := r.json(t)["id"].(string)
	for name, typ := range map[string]string{"full": "image/jpeg", "icon": "image/png", "image": "image/jpeg"} {
		b := h.fetch(t, "/api/v1/uploads/"+gps+"/"+name, typ)
		if bytes.Contains(b, []byte("Exif")) || bytes.Contains(b, []byte("48.8584")) || bytes.Contains(b, []byte("GPS")) {
			t.Fatalf("%s keeps the metadata", name)
		}
	}

	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	// WebP and GIF, each by its bytes whatever is declared; served as PNG.
	var gifBody bytes.Buffer
	if err := gif.Encode(&gifBody, pixels(40, 30), nil); err != nil {
		t.Fatal(err)
	}
	webp := []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")
	for _, c := range []struct {
		declared, typ string
		body          []byte
		w, h          float64
	}{{"application/octet-stream", "image/gif", gifBody.Bytes(), 40, 30}, {"image/png", "image/webp", webp, 1, 1}} {
		r := h.doBytes("POST", "/api/v1/upload", c.declared, c.body, key...)
		if v := r.json(t); r.status != 201 || v["type"] != c.typ || v["width"] != c.w || v["height"] != c.h {
			t.Fatalf("%s: %d %s", c.typ, r.status, r.body)
		}
		h.fetch(t, "/api/v1/uploads/"+r.json(t)["id"].(string)+"/full", "image/png")
	}

	// Refusals, each changing nothing.
	events := h.key([]string{ScopeEventsWrite, ScopeSettingsWrite}, nil)
	before := h.dump.take(t)
	ct, noFile := multipartBody(t, "image", "image/png", pngOf(t, 10, 10))
	for _, c := range []struct {
		name, ct string
		body     []byte
		status   int
		extra    string
		code     string
	}{
		{"text", "image/png", []byte("this is not an image at all"), 400, `,"message":"the body is not a PNG, JPEG, WebP or GIF image"`, CodeNotAnImage},
		{"svg", "image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), 400,
			`,"message":"the body is not a PNG, JPEG, WebP or GIF image"`, CodeNotAnImage},
		{"empty", "image/png", nil, 400, `,"message":"the body is not a PNG, JPEG, WebP or GIF image"`, CodeNotAnImage},
		{"50,000 x 50,000 pixels", "image/png", pngBomb(50000, 50000), 400, `,"message":"the image has more than 16777216 pixels"`, CodeImageTooLarge},
		{"no file field", ct, noFile, 400, `,"message":"the multipart/form-data body has no file field"`, CodeFileRequired},
		{"over 1 MB", "image/png", make([]byte, 1<<20+1), 413, `,"message":"the body exceeds 1048576 bytes"`, CodePayloadTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "50,000 x 50,000 pixels" && len(c.body) > 100 {
				t.Fatalf("the bomb is %d bytes", len(c.body))
			}
			expectError(t, h.doBytes("POST", "/api/v1/upload", c.ct, c.body, key...), c.status, c.code, c.extra)
		})
	}
	// Scopes: send (or full) only.
	expectError(t, h.doBytes("POST", "/api/v1/upload", "image/png", pngOf(t, 10, 10), auth(events)...), 403, CodeInsufficientScope, `,"required":"send"`)
	expectError(t, h.do("DELETE", "/api/v1/upload/"+id, "", auth(events)...), 403, CodeInsufficientScope, `,"required":"send"`)
	expectError(t, h.doBytes("POST", "/api/v1/upload", "image/png", pngOf(t, 10, 10)), 401, CodeNotAuthenticated, "")
	// Another website's upload, an unknown one, no UUID: 404.
	expectError(t, h.do("DELETE", "/api/v1/upload/"+id, "", auth(other.APIKey)...), 404, CodeNotFound, "")
	expectError(t, h.do("DELETE", "/api/v1/upload/00000000-0000-4000-8000-000000000000", "", key...), 404, CodeNotFound, "")
	expectError(t, h.do("DELETE", "/api/v1/upload/nope", "", key...), 404, CodeNotFound, "")
	expectError(t, h.do("GET", "/api/v1/uploads/"+id+"/original", ""), 404, CodeNotFound, "")
	expectError(t, h.do("GET", "/api/v1/uploads/nope/icon", ""), 404, CodeNotFound, "")
	if h.dump.take(t) != before {
		t.Fatal("a refused request changed the stores")
	}

	// DELETE: the files are gone.
	if r := h.do("DELETE", "/api/v1/upload/"+id, "", key...); r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	expectError(t, h.do("GET", "/api/v1/uploads/"+id+"/icon", ""), 404, CodeNotFound, "")
	expectError(t, h.do("DELETE", "/api/v1/upload/"+id, "", key...), 404, CodeNotFound, "")
}

// Spec 8.1: 60 uploads an hour per IP address, with the RateLimit-*
// headers, and 429 rate_limited with Retry-After past them; refused
// uploads count too.
func TestUploadRateLimit(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.TrustProxy = true; c.RateSync = -1 })
	h.clock.Add(-15 * time.Minute) // 11:45: 900 s left in the hour
	key := auth(h.site.APIKey)
	for i := 1; i <= 60; i++ {
		r := h.doBytes("POST", "/api/v1/upload", "image/png", []byte("x"), append(key, "X-Forwarded-For", "198.51.100.1")...)
		if r.status != 400 || r.header["Ratelimit-Limit"] != "60" || r.header["Ratelimit-Remaining"] != strconv.Itoa(60-i) ||
			r.header["Ratelimit-Reset"] != "900" {
			t.Fatalf("upload %d: %d %v", i, r.status, r.header)
		}
	}
	r := h.doBytes("POST", "/api/v1/upload", "image/png", pngOf(t, 8, 8), append(key, "X-Forwarded-For", "198.51.100.1")...)
	expectError(t, r, 429, CodeRateLimited, `,"message":"this address may upload 60 images an hour"`)
	if r.header["Retry-After"] != "900" || r.header["Ratelimit-Remaining"] != "0" {
		t.Fatalf("429 headers %v", r.header)
	}
	// Another address is not held; the next hour starts afresh.
	if r := h.doBytes("POST", "/api/v1/upload", "image/png", pngOf(t, 8, 8), append(key, "X-Forwarded-For", "198.51.100.2")...); r.status != 201 {
		t.Fatalf("another address: %d", r.status)
	}
	h.clock.Add(15 * time.Minute)
	if r := h.doBytes("POST", "/api/v1/upload", "image/png", pngOf(t, 8, 8), append(key, "X-Forwarded-For", "198.51.100.1")...); r.status != 201 ||
		r.header["Ratelimit-Remaining"] != "59" {
		t.Fatalf("next hour: %d %v", r.status, r.header)
	}
}

func TestLogoRoutes(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	if r := h.do("GET", "/api/v1/logo", "", key...); r.status != 200 || string(r.body) != `{"logo":null}` {
		t.Fatalf("GET: %d %s", r.status, r.body)
	}
	r := h.doBytes("POST", "/api/v1/upload", "image/png", pngOf(t, 64, 64), key...)
	id := r.json(t)["id"].(string)
	icon := "http:///api/v1/uploads/" + id + "/icon"
	wantUpload := fmt.Sprintf(`{"logo":{"uploadId":%q,"url":%q}}`, id, icon)
	if r := h.do("PUT", "/api/v1/logo", fmt.Sprintf(`{"uploadId":%q}`, id), key...); r.status != 200 || string(r.body) != wantUpload {
		t.Fatalf("PUT upload: %d %s", r.status, r.body)
	}
	if r := h.do("GET", "/api/v1/logo", "", key...); r.status != 200 || string(r.body) != wantUpload {
		t.Fatalf("GET: %d %s", r.status, r.body)
	}
	// The SDK's /config carries it for the prompt.
	if r := h.do("GET", "/api/v1/projects/"+h.site.ProjectID+"/config", ""); r.status != 200 ||
		string(r.body) != `{"vapidPublicKey":"`+h.site.VAPIDPublicKey+`","topics":[],"logo":"`+icon+`","prompt":null}` {
		t.Fatalf("config: %d %s", r.status, r.body)
	}
	// A send without an icon takes the logo; one with an icon keeps its own.
	for _, c := range []struct{ body, icon string }{
		{`{"title":"Hi"}`, icon},
		{`{"title":"Hi","icon":"https://cdn.example/own.png"}`, "https://cdn.example/own.png"},
	} {
		r := h.do("POST", "/api/v1/notifications", c.body, key...)
		if r.status != 202 {
			t.Fatalf("send: %d %s", r.status, r.body)
		}
		d := h.do("GET", "/api/v1/notifications/"+r.json(t)["notificationId"].(string), "", key...)
		if got := d.json(t)["notification"].(map[string]any)["icon"]; got != c.icon {
			t.Fatalf("send %s: icon %v, want %s", c.body, got, c.icon)
		}
	}

	wantURL := `{"logo":{"uploadId":null,"url":"https://shop.example/logo.png"}}`
	if r := h.do("PUT", "/api/v1/logo", `{"url":"https://shop.example/logo.png"}`, key...); r.status != 200 || string(r.body) != wantURL {
		t.Fatalf("PUT url: %d %s", r.status, r.body)
	}

	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	send := h.key([]string{ScopeSend}, nil)
	before := h.dump.take(t)
	for _, c := range []struct{ body, code, extra string }{
		{`{}`, CodeNothingToUpdate, `,"message":"send uploadId or url, or null to remove the logo"`},
		{`{"url":"http://shop.example/logo.png"}`, CodeInvalidURL, `,"message":"url must be an https URL of at most 2048 characters"`},
		{`{"url":"javascript:alert(1)"}`, CodeInvalidURL, `,"message":"url must be an https URL of at most 2048 characters"`},
		{`{"url":5}`, CodeInvalidLogo, `,"message":"url must be a string or null"`},
		{fmt.Sprintf(`{"uploadId":%q,"url":"https://shop.example/a.png"}`, id), CodeInvalidLogo, `,"message":"send uploadId or url, not both"`},
		{`{"uploadId":"00000000-0000-4000-8000-000000000000"}`, CodeUploadNotFound, `,"message":"uploadId names no upload of this website"`},
		{`{"uploadId":"nope"}`, CodeUploadNotFound, `,"message":"uploadId names no upload of this website"`},
		{`{"logo":"x"}`, CodeUnknownField, `,"message":"unknown field \"logo\""`},
	} {
		expectError(t, h.do("PUT", "/api/v1/logo", c.body, key...), 400, c.code, c.extra)
	}
	expectError(t, h.do("PUT", "/api/v1/logo", `{"url":null}`, auth(send)...), 403, CodeInsufficientScope, `,"required":"settings:write"`)
	if r := h.do("GET", "/api/v1/logo", "", auth(send)...); r.status != 200 || string(r.body) != wantURL {
		t.Fatalf("GET with a send key: %d %s", r.status, r.body)
	}
	// Another website's upload is not found for this one.
	expectError(t, h.do("PUT", "/api/v1/logo", fmt.Sprintf(`{"uploadId":%q}`, id), auth(other.APIKey)...), 400, CodeUploadNotFound,
		`,"message":"uploadId names no upload of this website"`)
	if h.dump.take(t) != before {
		t.Fatal("a refused change changed the stores")
	}

	// Deleting the upload the logo is made of removes the logo.
	h.do("PUT", "/api/v1/logo", fmt.Sprintf(`{"uploadId":%q}`, id), key...)
	if r := h.do("DELETE", "/api/v1/upload/"+id, "", key...); r.status != 200 {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	if r := h.do("GET", "/api/v1/logo", "", key...); string(r.body) != `{"logo":null}` {
		t.Fatalf("after delete: %s", r.body)
	}
	if r := h.do("PUT", "/api/v1/logo", `{"uploadId":null,"url":null}`, key...); r.status != 200 || string(r.body) != `{"logo":null}` {
		t.Fatalf("PUT null: %d %s", r.status, r.body)
	}
}
