package suggestions

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Input is what a suggestion is made for.
type Input struct {
	Title    string `json:"title"`
	Message  string `json:"message"`
	URL      string `json:"url,omitempty"`
	Language string `json:"language,omitempty"`
	Tone     string `json:"tone,omitempty"`
}

// Tones an Input may ask for ("" is none).
const (
	ToneFriendly = "friendly"
	ToneUrgent   = "urgent"
	ToneFormal   = "formal"
)

// Suggestion is one proposed title and message, with the reason for it.
type Suggestion struct {
	Title   string `json:"title"`
	Message string `json:"message"`
	Why     string `json:"why"`
}

// Suggester makes suggestions; it answers at least one.
type Suggester interface {
	Suggest(ctx context.Context, in Input) ([]Suggestion, error)
}

// Platform is how much of a notification a platform shows before it cuts
// the text: approximate visible characters of the title and the message
// in its default notification style, as the push services' own guides
// and the major senders' documentation give them.
type Platform struct {
	Name           string
	Title, Message int
}

// Platforms are the major platforms, each with what it shows (Chrome's
// figures are the composer's, dashboard/static/pages/budget.js).
var Platforms = []Platform{
	{"Chrome on Windows", 60, 120},
	{"Chrome on macOS", 40, 90},
	{"Chrome on Android", 40, 240},
	{"Firefox on Windows", 60, 120},
	{"Safari on macOS", 40, 90},
	{"Safari on iOS", 50, 150},
}

// fitTitle and fitMessage are what every platform shows whole.
var fitTitle, fitMessage = func() (int, int) {
	t, m := Platforms[0].Title, Platforms[0].Message
	for _, p := range Platforms {
		t, m = min(t, p.Title), min(m, p.Message)
	}
	return t, m
}()

// Bounds of the shorter form.
const (
	shortTitle   = 30
	shortMessage = 60
)

// The merge tag the personalised form uses: the subscriber's first_name
// tag, or "there" for those without one.
const nameTag = "{first_name|there}"

// Rules is the offline suggester: deterministic rules, no model.
type Rules struct{}

var _ Suggester = Rules{}

// Suggest answers the forms of in that differ from it and from each
// other, in the order in.Tone prefers. English additions ("Today only",
// a question) are made only for an English text (Language "" or en-*);
// other languages get the fitted and the shorter form.
func (Rules) Suggest(_ context.Context, in Input) ([]Suggestion, error) {
	title, message := clean(in.Title), clean(in.Message)
	english := in.Language == "" || strings.EqualFold(in.Language, "en") || strings.HasPrefix(strings.ToLower(in.Language), "en-")
	forms := map[string]Suggestion{}
	// Fitted: every word shown on every platform.
	if n, m := runes(title), runes(message); n > fitTitle || m > fitMessage {
		var cut []string
		for _, p := range Platforms {
			if n > p.Title || m > p.Message {
				cut = append(cut, p.Name)
			}
		}
		forms["fit"] = Suggestion{Title: truncate(title, fitTitle), Message: truncate(message, fitMessage),
			Why: fmt.Sprintf("Fits what every major platform shows (a title of %d characters and a message of %d); as written it would be cut on %s.",
				fitTitle, fitMessage, strings.Join(cut, ", "))}
	}
	// Shorter: the title's first part, the message's first sentence.
	st, sm := truncate(firstPart(title), shortTitle), truncate(firstSentence(message), shortMessage)
	forms["shorter"] = Suggestion{Title: st, Message: sm,
		Why: fmt.Sprintf("Shorter texts are read at a glance: %d characters of title and %d of message, whole on every platform.", runes(st), runes(sm))}
	if english {
		ut := title
		if !urgent(title) {
			ut = "Today only: " + lowerFirst(title)
		}
		um := strings.TrimSpace(message + " Don't miss out.")
		forms["urgent"] = Suggestion{Title: truncate(ut, fitTitle), Message: truncate(um, fitMessage),
			Why: "A deadline gives a reason to act now rather than later; use it only when it is true."}
		pm := "Hi " + nameTag + ", " + lowerFirst(message)
		if message == "" {
			pm = "Hi " + nameTag + "!"
		}
		forms["personalised"] = Suggestion{Title: truncate(title, fitTitle), Message: truncateTagged(pm, fitMessage),
			Why: "A name catches the eye: " + nameTag + " puts in each subscriber's first_name tag, or \"there\" for those without one."}
		qt := title
		if !strings.HasSuffix(title, "?") {
			qt = "Have you heard? " + strings.TrimRight(title, ".!")
		}
		qm := strings.TrimSpace(message + " Want to take a look?")
		forms["question"] = Suggestion{Title: truncate(qt, fitTitle), Message: truncate(qm, fitMessage),
			Why: "A question invites an answer: people open the notification to find it."}
	}
	order := []string{"fit", "shorter", "urgent", "personalised", "question"}
	switch in.Tone {
	case ToneUrgent:
		order = []string{"urgent", "fit", "shorter", "question", "personalised"}
	case ToneFriendly:
		order = []string{"personalised", "question", "fit", "shorter", "urgent"}
	case ToneFormal:
		order = []string{"fit", "shorter", "personalised"}
	}
	var out []Suggestion
	seen := map[[2]string]bool{{title, message}: true}
	for _, name := range order {
		s, ok := forms[name]
		if !ok || seen[[2]string{s.Title, s.Message}] || s.Title == "" {
			continue
		}
		seen[[2]string{s.Title, s.Message}] = true
		out = append(out, s)
	}
	if len(out) == 0 {
		out = append(out, Suggestion{Title: title, Message: message,
			Why: "Already short and whole on every platform: nothing to change."})
	}
	return out, nil
}

// clean folds runs of white space into one space and trims.
func clean(s string) string { return strings.Join(strings.Fields(s), " ") }

func runes(s string) int { return utf8.RuneCountInString(s) }

// truncate cuts s to at most n characters at a word boundary, with an
// ellipsis when it cut.
func truncate(s string, n int) string {
	if runes(s) <= n {
		return s
	}
	r := []rune(s)[:n-1]
	cut := string(r)
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:.-–—") + "…"
}

// truncateTagged is truncate for a text starting with the merge tag: the
// tag is never cut.
func truncateTagged(s string, n int) string {
	if runes(s) <= n {
		return s
	}
	head := "Hi " + nameTag + ", "
	if !strings.HasPrefix(s, head) {
		return truncate(s, n)
	}
	return head + truncate(s[len(head):], max(n-runes(head), 10))
}

// firstPart is a title before its first separator.
func firstPart(s string) string {
	for _, sep := range []string{" | ", " - ", " – ", " — ", ": "} {
		if i := strings.Index(s, sep); i > 0 {
			s = s[:i]
		}
	}
	return s
}

// firstSentence is the text up to its first sentence end.
func firstSentence(s string) string {
	for i, r := range s {
		if (r == '.' || r == '!' || r == '?') && (i+1 == len(s) || s[i+1] == ' ') {
			return s[:i+1]
		}
	}
	return s
}

// urgent reports whether s already says it is urgent.
func urgent(s string) bool {
	l := strings.ToLower(s)
	for _, w := range []string{"today", "now", "last chance", "ends", "hurry", "only", "tonight", "limited"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// lowerFirst lower-cases the first letter unless the first word looks
// like a name or an acronym (a second capital in it).
func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || !unicode.IsUpper(r) {
		return s
	}
	word, _, _ := strings.Cut(s[n:], " ")
	for _, c := range word {
		if unicode.IsUpper(c) {
			return s
		}
	}
	if word == "" && (r == 'I') {
		return s
	}
	return string(unicode.ToLower(r)) + s[n:]
}
