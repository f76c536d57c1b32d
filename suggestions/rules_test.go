package suggestions

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

func TestRulesShortText(t *testing.T) {
	got, err := Rules{}.Suggest(context.Background(), Input{Title: " New  arrivals ", Message: "See what came in."})
	if err != nil {
		t.Fatal(err)
	}
	want := []Suggestion{
		{"Today only: new arrivals", "See what came in. Don't miss out.", "A deadline gives a reason to act now rather than later; use it only when it is true."},
		{"New arrivals", "Hi {first_name|there}, see what came in.", `A name catches the eye: {first_name|there} puts in each subscriber's first_name tag, or "there" for those without one.`},
		{"Have you heard? New arrivals", "See what came in. Want to take a look?", "A question invites an answer: people open the notification to find it."},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
}

func TestRulesLongText(t *testing.T) {
	in := Input{Title: "Spring sale: 20% off every jacket and coat in the store",
		Message: "Our biggest sale of the season starts now. Free shipping on every order over 50 euros, this week only."}
	got, _ := Rules{}.Suggest(context.Background(), in)
	if len(got) != 5 {
		t.Fatalf("%d suggestions, want 5: %#v", len(got), got)
	}
	want0 := Suggestion{"Spring sale: 20% off every jacket and…", "Our biggest sale of the season starts now. Free shipping on every order over 50 euros…",
		"Fits what every major platform shows (a title of 40 characters and a message of 90); as written it would be cut on Chrome on macOS, Chrome on Android, Safari on macOS, Safari on iOS."}
	want1 := Suggestion{"Spring sale", "Our biggest sale of the season starts now.",
		"Shorter texts are read at a glance: 11 characters of title and 42 of message, whole on every platform."}
	if got[0] != want0 || got[1] != want1 {
		t.Fatalf("fit and shorter:\n%#v\n%#v", got[0], got[1])
	}
	for _, s := range got {
		if runes(s.Title) > fitTitle || runes(s.Message) > fitMessage || s.Why == "" {
			t.Fatalf("%#v is not within %d and %d", s, fitTitle, fitMessage)
		}
	}
	// The same input gives the same suggestions; tone orders them.
	again, _ := Rules{}.Suggest(context.Background(), in)
	if !reflect.DeepEqual(got, again) {
		t.Fatal("not deterministic")
	}
	in.Tone = ToneUrgent
	urgentFirst, _ := Rules{}.Suggest(context.Background(), in)
	if !strings.HasPrefix(urgentFirst[0].Title, "Today only: ") {
		t.Fatalf("tone urgent: first %#v", urgentFirst[0])
	}
}

// Another language gets no English additions.
func TestRulesOtherLanguage(t *testing.T) {
	got, _ := Rules{}.Suggest(context.Background(), Input{Title: "Neue Kollektion ist da und sie ist wirklich schön geworden",
		Message: "Entdecke jetzt die neuen Jacken.", Language: "de"})
	if len(got) != 2 || got[0].Title != "Neue Kollektion ist da und sie ist…" || got[1].Title != "Neue Kollektion ist da und…" {
		t.Fatalf("%#v", got)
	}
}

// A text nothing improves still gets one answer.
func TestRulesNothingToChange(t *testing.T) {
	got, _ := Rules{}.Suggest(context.Background(), Input{Title: "Hi", Language: "fr"})
	if want := []Suggestion{{"Hi", "", "Already short and whole on every platform: nothing to change."}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("%#v", got)
	}
}

// FuzzRules: any text gives at least one suggestion, each with a title
// and a reason, and never panics.
func FuzzRules(f *testing.F) {
	f.Add("Spring sale: 20% off", "Ends tonight. Hurry!", "en", "urgent")
	f.Add("", "", "", "")
	f.Add("Ünïcødé — titel | x", "Satz eins. Satz zwei", "de", "formal")
	f.Fuzz(func(t *testing.T, title, message, lang, tone string) {
		got, err := Rules{}.Suggest(context.Background(), Input{Title: title, Message: message, Language: lang, Tone: tone})
		if err != nil || len(got) == 0 {
			t.Fatalf("%v %v", got, err)
		}
		for _, s := range got {
			if s.Why == "" {
				t.Fatalf("no why: %#v", s)
			}
		}
	})
}
