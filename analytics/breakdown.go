package analytics

// Breakdown turns sent and clicked counts per (device, language, variant)
// into the report's device, language and variant rows. Every backend reads
// its event log into one, so the rows mean the same everywhere.
type Breakdown struct {
	devices   map[string]*DeviceRow
	languages map[string]*LanguageRow
	variants  map[string]*VariantRow
}

// Add counts one group. An empty device is "other"; a language is cut to
// its two letters, and one shorter than that is "unknown"; an empty variant
// means the send was no A/B test.
func (b *Breakdown) Add(device, language, variant string, sent, clicked int64) {
	if b.devices == nil {
		b.devices = map[string]*DeviceRow{}
		b.languages = map[string]*LanguageRow{}
		b.variants = map[string]*VariantRow{}
	}
	if device == "" {
		device = "other"
	}
	if len(language) >= 2 {
		language = language[:2]
	} else {
		language = "unknown"
	}
	d := row(b.devices, device, func() *DeviceRow { return &DeviceRow{Device: device} })
	d.Sent, d.Clicked = d.Sent+sent, d.Clicked+clicked
	l := row(b.languages, language, func() *LanguageRow { return &LanguageRow{Language: language} })
	l.Sent, l.Clicked = l.Sent+sent, l.Clicked+clicked
	if variant != "" {
		v := row(b.variants, variant, func() *VariantRow { return &VariantRow{Variant: variant} })
		v.Sent, v.Clicked = v.Sent+sent, v.Clicked+clicked
	}
}

func row[T any](m map[string]*T, key string, create func() *T) *T {
	r, ok := m[key]
	if !ok {
		r = create()
		m[key] = r
	}
	return r
}

// Fill sets r's device, language and variant rows, sorted as the API shows them.
func (b *Breakdown) Fill(r *Report) {
	for _, d := range b.devices {
		r.Devices = append(r.Devices, *d)
	}
	for _, l := range b.languages {
		r.Languages = append(r.Languages, *l)
	}
	for _, v := range b.variants {
		v.Ctr = Ctr(v.Clicked, v.Sent)
		r.Variants = append(r.Variants, *v)
	}
	SortReport(r)
}
