package analytics

import (
	"cmp"
	"math"
	"slices"
)

// SortReport orders a report's rows the way the API shows them: most sent
// first, then by name; variants a before b.
func SortReport(r *Report) {
	slices.SortFunc(r.Devices, func(a, b DeviceRow) int {
		return cmp.Or(cmp.Compare(b.Sent, a.Sent), cmp.Compare(a.Device, b.Device))
	})
	slices.SortFunc(r.Languages, func(a, b LanguageRow) int {
		return cmp.Or(cmp.Compare(b.Sent, a.Sent), cmp.Compare(a.Language, b.Language))
	})
	slices.SortFunc(r.Variants, func(a, b VariantRow) int { return cmp.Compare(a.Variant, b.Variant) })
}

// Ctr is clicked/sent as a percentage with one decimal (0 when nothing was sent).
func Ctr(clicked, sent int64) float64 {
	if sent <= 0 {
		return 0
	}
	return math.Round(float64(clicked)*1000/float64(sent)) / 10
}
