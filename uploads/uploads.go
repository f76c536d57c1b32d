package uploads

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"
)

// Bounds of an upload.
const (
	// MaxPixels bounds an upload's width times height, checked from its
	// header before decoding: 16.7 million pixels (4096 x 4096) take 67 MB
	// decoded, which two decodes at once keep well within a node.
	MaxPixels = 4096 * 4096
	// MaxSide bounds the longer side of the full image served.
	MaxSide = 2048
)

// Sizes of the files push services prefer.
const (
	IconWidth, IconHeight   = 192, 192
	ImageWidth, ImageHeight = 1024, 512
)

// Content types of what is stored and served.
const (
	TypePNG  = "image/png"
	TypeJPEG = "image/jpeg"
	TypeWebP = "image/webp"
	TypeGIF  = "image/gif"
)

// Errors Process answers, for the API to name.
var (
	// ErrNotImage: the bytes are none of the four formats, or do not decode.
	ErrNotImage = errors.New("not a PNG, JPEG, WebP or GIF image")
	// ErrTooLarge: the header declares more than MaxPixels pixels.
	ErrTooLarge = errors.New("image has too many pixels")
)

// Sniff tells the format of b by its first bytes: one of the Type*
// constants, or "" for none of the four.
func Sniff(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return TypePNG
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return TypeJPEG
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return TypeWebP
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return TypeGIF
	}
	return ""
}

// File is one re-encoded file.
type File struct {
	Type string // TypePNG or TypeJPEG
	Data []byte
}

// Result is an upload made into its files.
type Result struct {
	Type          string // what the bytes are, by Sniff
	Width, Height int    // of the upload
	Full          File   // the whole image, at most MaxSide on its longer side
	Icon          File   // IconWidth x IconHeight PNG
	Image         File   // ImageWidth x ImageHeight JPEG
}

// config reads the header of b in format typ.
func config(typ string, b []byte) (image.Config, error) {
	r := bytes.NewReader(b)
	switch typ {
	case TypePNG:
		return png.DecodeConfig(r)
	case TypeJPEG:
		return jpeg.DecodeConfig(r)
	case TypeWebP:
		return webp.DecodeConfig(r)
	case TypeGIF:
		return gif.DecodeConfig(r)
	}
	return image.Config{}, ErrNotImage
}

func decode(typ string, b []byte) (image.Image, error) {
	r := bytes.NewReader(b)
	switch typ {
	case TypePNG:
		return png.Decode(r)
	case TypeJPEG:
		return jpeg.Decode(r)
	case TypeWebP:
		return webp.Decode(r)
	case TypeGIF:
		return gif.Decode(r) // the first frame
	}
	return nil, ErrNotImage
}

// Check sniffs b and reads its header: the format and size, ErrNotImage
// or ErrTooLarge. No pixel is decoded.
func Check(b []byte) (typ string, width, height int, err error) {
	typ = Sniff(b)
	if typ == "" {
		return "", 0, 0, ErrNotImage
	}
	cfg, err := config(typ, b)
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return "", 0, 0, ErrNotImage
	}
	if int64(cfg.Width)*int64(cfg.Height) > MaxPixels {
		return "", 0, 0, ErrTooLarge
	}
	return typ, cfg.Width, cfg.Height, nil
}

// Process proves b is an image within MaxPixels and makes its files.
func Process(b []byte) (Result, error) {
	typ, w, h, err := Check(b)
	if err != nil {
		return Result{}, err
	}
	img, err := decode(typ, b)
	if err != nil {
		return Result{}, ErrNotImage
	}
	canvas := image.Rect(0, 0, w, h)
	bd := img.Bounds()
	if bd != canvas && (typ != TypeGIF || !bd.In(canvas)) {
		return Result{}, ErrNotImage // a header that lies about the pixels
	}
	// One conversion to RGBA (the standard library's fast paths from
	// YCbCr, paletted and NRGBA), so that the scaler takes its RGBA to RGBA
	// path instead of one interface call per pixel. A GIF's first frame may
	// cover part of its logical screen: the rest is transparent.
	rgba := image.NewRGBA(canvas)
	draw.Draw(rgba, bd, img, bd.Min, draw.Src)
	img = rgba
	res := Result{Type: typ, Width: w, Height: h}
	full := img
	if w > MaxSide || h > MaxSide {
		fw, fh := MaxSide, h*MaxSide/w
		if h > w {
			fw, fh = w*MaxSide/h, MaxSide
		}
		full = scale(img, img.Bounds(), max(fw, 1), max(fh, 1), false)
	}
	if typ == TypeJPEG {
		res.Full, err = encodeJPEG(full)
	} else {
		res.Full, err = encodePNG(full)
	}
	if err != nil {
		return Result{}, err
	}
	if res.Icon, err = encodePNG(scale(img, cover(img.Bounds(), IconWidth, IconHeight), IconWidth, IconHeight, false)); err != nil {
		return Result{}, err
	}
	if res.Image, err = encodeJPEG(scale(img, cover(img.Bounds(), ImageWidth, ImageHeight), ImageWidth, ImageHeight, true)); err != nil {
		return Result{}, err
	}
	return res, nil
}

// cover is the largest rectangle of b's centre with the aspect ratio w:h.
func cover(b image.Rectangle, w, h int) image.Rectangle {
	bw, bh := b.Dx(), b.Dy()
	cw, ch := bw, bw*h/w
	if ch > bh {
		cw, ch = bh*w/h, bh
	}
	cw, ch = max(cw, 1), max(ch, 1)
	x := b.Min.X + (bw-cw)/2
	y := b.Min.Y + (bh-ch)/2
	return image.Rect(x, y, x+cw, y+ch)
}

// scale draws the src rectangle of img into a new w x h image; opaque
// fills it white first (for JPEG, which has no transparency).
func scale(img image.Image, src image.Rectangle, w, h int, opaque bool) image.Image {
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	op := draw.Src
	if opaque {
		draw.Draw(dst, dst.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
		op = draw.Over
	}
	draw.CatmullRom.Scale(dst, dst.Bounds(), img, src, op, nil)
	return dst
}

func encodePNG(img image.Image) (File, error) {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.DefaultCompression}
	if err := enc.Encode(&buf, img); err != nil {
		return File{}, fmt.Errorf("encoding png: %w", err)
	}
	return File{Type: TypePNG, Data: buf.Bytes()}, nil
}

func encodeJPEG(img image.Image) (File, error) {
	if !opaque(img) {
		flat := image.NewRGBA(img.Bounds())
		draw.Draw(flat, flat.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
		draw.Draw(flat, flat.Bounds(), img, img.Bounds().Min, draw.Over)
		img = flat
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85}); err != nil {
		return File{}, fmt.Errorf("encoding jpeg: %w", err)
	}
	return File{Type: TypeJPEG, Data: buf.Bytes()}, nil
}

func opaque(img image.Image) bool {
	if o, ok := img.(interface{ Opaque() bool }); ok {
		return o.Opaque()
	}
	return false
}
