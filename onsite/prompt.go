package onsite

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Prompt kinds and soft prompt styles.
const (
	KindNative = "native" // the browser's own request, after a gesture
	KindSoft   = "soft"   // the website's question first
	KindBell   = "bell"   // a bell button

	StyleSlideDown = "slide-down"
	StyleModal     = "modal"
)

// Limits of a prompt.
const (
	MaxPromptText    = 300
	MaxTranslations  = 50
	MaxPromptSeconds = 3600
	MaxPageViews     = 100
	MaxDismissDays   = 365
	DefaultDismiss   = 7
)

// PromptTexts are what a soft prompt, the bell and the iOS hint say.
type PromptTexts struct {
	Title   string `json:"title"`
	Message string `json:"message"`
	Accept  string `json:"accept"`
	Dismiss string `json:"dismiss"`
	// IOSHint is what iOS Safari shows, outside a home-screen app, in
	// place of a request that cannot succeed there.
	IOSHint string `json:"iosHint"`
}

// PromptWhen is when the prompt shows: all of its conditions met.
type PromptWhen struct {
	Seconds       int `json:"seconds"`
	PageViews     int `json:"pageViews"`
	ScrollPercent int `json:"scrollPercent"`
}

// Prompt is a website's subscription prompt (GET/PUT /prompt).
type Prompt struct {
	Enabled      bool                   `json:"enabled"`
	Kind         string                 `json:"kind"`
	Style        string                 `json:"style"`
	Texts        PromptTexts            `json:"texts"`
	Translations map[string]PromptTexts `json:"translations"`
	When         PromptWhen             `json:"when"`
	Include      []string               `json:"include"`
	Exclude      []string               `json:"exclude"`
	DismissDays  int                    `json:"dismissDays"`
}

// DefaultPrompt is the prompt of a website that never set one: off.
func DefaultPrompt() Prompt {
	return Prompt{
		Kind:  KindSoft,
		Style: StyleSlideDown,
		Texts: PromptTexts{
			Title:   "Get our notifications",
			Message: "We'll let you know when there is something new. You can turn them off at any time.",
			Accept:  "Allow",
			Dismiss: "Not now",
			IOSHint: "To get notifications, tap Share and then Add to Home Screen.",
		},
		Translations: map[string]PromptTexts{},
		Include:      []string{},
		Exclude:      []string{},
		DismissDays:  DefaultDismiss,
	}
}

// ReadPrompt is the stored prompt, or the default when none was stored.
func ReadPrompt(b []byte) (Prompt, error) {
	p := DefaultPrompt()
	if b == nil {
		return p, nil
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return Prompt{}, fmt.Errorf("reading prompt: %w", err)
	}
	return p, nil
}

// languageTag is a translation's key: a language, and a region or
// script.
var languageTag = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$`)

// Check refuses what the prompt cannot be, and fills empty texts with the
// defaults.
func (p *Prompt) Check() error {
	bad := func(format string, args ...any) error { return errorf(CodeInvalidPrompt, format, args...) }
	switch p.Kind {
	case KindNative, KindSoft, KindBell:
	default:
		return bad("kind is native, soft or bell")
	}
	switch p.Style {
	case StyleSlideDown, StyleModal:
	default:
		return bad("style is slide-down or modal")
	}
	def := DefaultPrompt().Texts
	if err := checkTexts(&p.Texts, "texts", def); err != nil {
		return err
	}
	if p.Translations == nil {
		p.Translations = map[string]PromptTexts{}
	}
	if len(p.Translations) > MaxTranslations {
		return bad("translations holds at most %d languages", MaxTranslations)
	}
	for lang, t := range p.Translations {
		if !languageTag.MatchString(lang) {
			return bad("translations: %q is not a language tag", lang)
		}
		if err := checkTexts(&t, "translations."+lang, PromptTexts{}); err != nil {
			return err
		}
		p.Translations[lang] = t // as checked: trimmed
	}
	w := p.When
	if w.Seconds < 0 || w.Seconds > MaxPromptSeconds {
		return bad("when.seconds is 0 to %d", MaxPromptSeconds)
	}
	if w.PageViews < 0 || w.PageViews > MaxPageViews {
		return bad("when.pageViews is 0 to %d", MaxPageViews)
	}
	if w.ScrollPercent < 0 || w.ScrollPercent > 100 {
		return bad("when.scrollPercent is 0 to 100")
	}
	if p.Include == nil {
		p.Include = []string{}
	}
	if p.Exclude == nil {
		p.Exclude = []string{}
	}
	if _, err := ParsePatterns(p.Include, p.Exclude); err != nil {
		return bad("%s", err)
	}
	if p.DismissDays < 0 || p.DismissDays > MaxDismissDays {
		return bad("dismissDays is 0 to %d", MaxDismissDays)
	}
	return nil
}

// checkTexts checks texts and fills the empty ones from def.
func checkTexts(t *PromptTexts, name string, def PromptTexts) error {
	for _, f := range []struct {
		name string
		s    *string
		def  string
	}{{"title", &t.Title, def.Title}, {"message", &t.Message, def.Message}, {"accept", &t.Accept, def.Accept},
		{"dismiss", &t.Dismiss, def.Dismiss}, {"iosHint", &t.IOSHint, def.IOSHint}} {
		*f.s = strings.TrimSpace(*f.s)
		if err := checkText(CodeInvalidPrompt, name+"."+f.name, *f.s, MaxPromptText); err != nil {
			return err
		}
		if *f.s == "" {
			*f.s = f.def
		}
	}
	return nil
}
