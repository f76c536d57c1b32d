package reports

import (
	"bytes"
	"image"
	"image/color"
	"image/png"

	"github.com/relaybell/relaybell/stats"
)

// Chart geometry, in pixels.
const (
	chartW, chartH = 600, 200
	chartPad       = 10
)

// Chart colours: sends in blue, clicks in orange, on white with a grey
// base line.
var (
	chartBG     = color.RGBA{255, 255, 255, 255}
	chartAxis   = color.RGBA{160, 160, 160, 255}
	chartSent   = color.RGBA{37, 99, 235, 255}
	chartClicks = color.RGBA{234, 88, 12, 255}
)

// Chart draws the period's sends (blue) and clicks (orange) per day as
// pairs of bars, each day's pair side by side, scaled to the largest
// day's sends, and encodes it as PNG. It is drawn with image/png alone:
// gonum.org/v1/plot would pull a font stack and upgrade shared
// dependencies of the module for a chart of bars.
func Chart(days []stats.DayStats) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, chartW, chartH))
	fill(img, img.Bounds(), chartBG)
	base := chartH - chartPad
	fill(img, image.Rect(chartPad, base, chartW-chartPad, base+1), chartAxis)
	var top int64
	for _, d := range days {
		top = max(top, d.Sent, d.Clicked)
	}
	if n := len(days); n > 0 && top > 0 {
		slot := (chartW - 2*chartPad) / n
		bar := max(slot*2/5, 1)
		for i, d := range days {
			x := chartPad + i*slot + (slot-2*bar)/2
			for j, v := range []int64{d.Sent, d.Clicked} {
				h := int(v * int64(base-chartPad) / top)
				if v > 0 && h == 0 {
					h = 1
				}
				c := chartSent
				if j == 1 {
					c = chartClicks
				}
				fill(img, image.Rect(x+j*bar, base-h, x+(j+1)*bar, base), c)
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}
