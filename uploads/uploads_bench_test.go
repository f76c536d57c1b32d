package uploads

import (
	"bytes"
	"image/jpeg"
	"testing"
)

// BenchmarkProcess is the cost of one upload: decoding, the three files
// re-encoded. A 4000x3000 photo is about the largest JPEG that fits the
// 1 MB body.
func BenchmarkProcess(b *testing.B) {
	for _, c := range []struct {
		name string
		w, h int
	}{{"jpeg-1200x800", 1200, 800}, {"jpeg-4000x3000", 4000, 3000}} {
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, testImage(c.w, c.h), &jpeg.Options{Quality: 60}); err != nil {
			b.Fatal(err)
		}
		data := buf.Bytes()
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Process(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckBomb is what a 50,000 x 50,000 PNG costs before it is
// refused: a header read.
func BenchmarkCheckBomb(b *testing.B) {
	data := PNGHeaderOnly(50000, 50000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Process(data); err != ErrTooLarge {
			b.Fatal(err)
		}
	}
}
