package uploads

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
)

// PNGHeaderOnly is a PNG whose IHDR declares w x h pixels, with one empty
// IDAT: a few dozen bytes that a decoder would need w*h*4 bytes for.
func PNGHeaderOnly(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(data)))
		b.Write(n[:])
		b.WriteString(typ)
		b.Write(data)
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		binary.BigEndian.PutUint32(n[:], crc.Sum32())
		b.Write(n[:])
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	chunk("IEND", nil)
	return b.Bytes()
}

func testImage(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), 128, 255})
		}
	}
	return img
}

func encoded(t *testing.T, typ string, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	var err error
	switch typ {
	case TypePNG:
		err = png.Encode(&b, img)
	case TypeJPEG:
		err = jpeg.Encode(&b, img, nil)
	case TypeGIF:
		err = gif.Encode(&b, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withEXIF puts an APP1 Exif segment holding a GPS IFD marker after a
// JPEG's SOI.
func withEXIF(jpg []byte, payload string) []byte {
	seg := append([]byte("Exif\x00\x00"), payload...)
	out := append([]byte{}, jpg[:2]...)
	out = append(out, 0xff, 0xe1, byte((len(seg)+2)>>8), byte(len(seg)+2))
	out = append(out, seg...)
	return append(out, jpg[2:]...)
}

// tinyWebP is a 1x1 lossless WebP.
var tinyWebP = []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")

func TestProcess(t *testing.T) {
	f := func(name string, b []byte, typ string, w, h int, fullType string) {
		t.Helper()
		res, err := Process(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.Type != typ || res.Width != w || res.Height != h || res.Full.Type != fullType {
			t.Fatalf("%s: %s %dx%d full %s, want %s %dx%d full %s", name, res.Type, res.Width, res.Height, res.Full.Type, typ, w, h, fullType)
		}
		for _, c := range []struct {
			f    File
			typ  string
			w, h int
		}{{res.Icon, TypePNG, IconWidth, IconHeight}, {res.Image, TypeJPEG, ImageWidth, ImageHeight}} {
			if c.f.Type != c.typ || Sniff(c.f.Data) != c.typ {
				t.Fatalf("%s: file %s sniffs %q, want %s", name, c.f.Type, Sniff(c.f.Data), c.typ)
			}
			cfg, _, err := image.DecodeConfig(bytes.NewReader(c.f.Data))
			if err != nil || cfg.Width != c.w || cfg.Height != c.h {
				t.Fatalf("%s: %v %dx%d, want %dx%d", name, err, cfg.Width, cfg.Height, c.w, c.h)
			}
		}
	}
	f("png", encoded(t, TypePNG, testImage(300, 200)), TypePNG, 300, 200, TypePNG)
	f("jpeg", encoded(t, TypeJPEG, testImage(200, 300)), TypeJPEG, 200, 300, TypeJPEG)
	f("gif", encoded(t, TypeGIF, testImage(64, 64)), TypeGIF, 64, 64, TypePNG)
	f("webp", tinyWebP, TypeWebP, 1, 1, TypePNG)
	f("wide", encoded(t, TypePNG, testImage(3000, 10)), TypePNG, 3000, 10, TypePNG)
}

func TestProcessBig(t *testing.T) {
	res, err := Process(encoded(t, TypeJPEG, testImage(3000, 1000)))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(res.Full.Data))
	if err != nil || cfg.Width != MaxSide || cfg.Height != 682 {
		t.Fatalf("full %v %dx%d, want %dx682", err, cfg.Width, cfg.Height, MaxSide)
	}
}

func TestProcessRefuses(t *testing.T) {
	f := func(name string, b []byte, want error) {
		t.Helper()
		if _, err := Process(b); !errors.Is(err, want) {
			t.Fatalf("%s: %v, want %v", name, err, want)
		}
	}
	f("empty", nil, ErrNotImage)
	f("text", []byte("hello, this is not an image"), ErrNotImage)
	f("svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"></svg>`), ErrNotImage)
	f("png magic only", []byte("\x89PNG\r\n\x1a\n"), ErrNotImage)
	f("truncated png", encoded(t, TypePNG, testImage(50, 50))[:60], ErrNotImage)
	f("bomb", PNGHeaderOnly(50000, 50000), ErrTooLarge)
	f("just over", PNGHeaderOnly(MaxPixels+1, 1), ErrTooLarge)
	f("lying header", PNGHeaderOnly(100, 100), ErrNotImage)
}

// The re-encoded files keep none of the upload's metadata.
func TestProcessStripsEXIF(t *testing.T) {
	const gps = "GPSLatitude=48.8584N;GPSLongitude=2.2945E"
	b := withEXIF(encoded(t, TypeJPEG, testImage(400, 300)), gps)
	if _, err := jpeg.Decode(bytes.NewReader(b)); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	res, err := Process(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []File{res.Full, res.Icon, res.Image} {
		if bytes.Contains(f.Data, []byte("Exif")) || bytes.Contains(f.Data, []byte("GPS")) {
			t.Fatalf("%s file keeps the metadata", f.Type)
		}
	}
}

func TestSniff(t *testing.T) {
	for in, want := range map[string]string{
		"\x89PNG\r\n\x1a\nrest": TypePNG, "\xff\xd8\xff\xe0": TypeJPEG, "RIFF\x00\x00\x00\x00WEBPVP8 ": TypeWebP,
		"GIF89a..": TypeGIF, "GIF87a": TypeGIF, "GIF88a": "", "RIFF\x00\x00\x00\x00WAVE": "", "": "", "\xff\xd8": "",
	} {
		if got := Sniff([]byte(in)); got != want {
			t.Errorf("Sniff(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzProcess: hostile bytes never panic, never pass the pixel bound, and
// an accepted upload has files of the promised sizes.
func FuzzProcess(f *testing.F) {
	var b bytes.Buffer
	_ = png.Encode(&b, testImage(8, 8))
	f.Add(b.Bytes())
	b.Reset()
	_ = jpeg.Encode(&b, testImage(8, 8), nil)
	f.Add(b.Bytes())
	b.Reset()
	_ = gif.Encode(&b, testImage(8, 8), nil)
	f.Add(b.Bytes())
	f.Add(tinyWebP)
	f.Add(PNGHeaderOnly(50000, 50000))
	f.Add([]byte("GIF89a\x01\x00\x01\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		typ, w, h, err := Check(data)
		if err == nil && (Sniff(data) != typ || int64(w)*int64(h) > MaxPixels) {
			t.Fatalf("Check passed %s %dx%d", typ, w, h)
		}
		if err != nil {
			return
		}
		res, err := Process(data)
		if err != nil {
			return
		}
		if len(res.Icon.Data) == 0 || len(res.Image.Data) == 0 || len(res.Full.Data) == 0 {
			t.Fatal("empty file")
		}
	})
}
