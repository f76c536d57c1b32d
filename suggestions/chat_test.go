package suggestions

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/netpolicy"
)

// fakeAI is an OpenAI-compatible chat completions server: it records the
// requests and answers with answer (nil: hangs until the client gives up).
type fakeAI struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	auth   []string
}

func newFakeAI(t *testing.T, status int, answer func() string) *fakeAI {
	f := &fakeAI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &body)
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		f.auth = append(f.auth, r.URL.Path+" "+r.Header.Get("Authorization"))
		f.mu.Unlock()
		if answer == nil {
			<-r.Context().Done() // never answers; the client's timeout ends it
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, answer())
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAI) config(t *testing.T) Config {
	allow, err := netpolicy.ParseAllowList(strings.TrimPrefix(f.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return Config{URL: f.URL + "/v1", Key: "sk-test", Allow: allow}
}

func completion(content string) string {
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": content}}}})
	return string(b)
}

var input = Input{Title: "New arrivals", Message: "See what came in."}

func rulesFor(in Input) []Suggestion {
	out, _ := Rules{}.Suggest(context.Background(), in)
	return out
}

func TestChatAnswers(t *testing.T) {
	f := newFakeAI(t, 200, func() string {
		return completion("```json\n" + `{"suggestions":[{"title":"Fresh in: new arrivals","message":"Take a look before they go.","why":"Names what is new."},` +
			`{"title":"","message":"dropped: no title","why":"x"}]}` + "\n```")
	})
	s, err := New(f.config(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Suggest(context.Background(), input)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Suggestion{{"Fresh in: new arrivals", "Take a look before they go.", "Names what is new."}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("%#v", got)
	}
	// The request: the chat completions route, the key, the model, the
	// token budget, the input as the user's message.
	if f.auth[0] != "/v1/chat/completions Bearer sk-test" {
		t.Fatalf("request %s", f.auth[0])
	}
	body := f.bodies[0]
	msgs := body["messages"].([]any)
	if body["model"] != DefaultModel || body["max_tokens"] != float64(DefaultMaxTokens) || len(msgs) != 2 ||
		msgs[1].(map[string]any)["content"] != `{"title":"New arrivals","message":"See what came in."}` {
		t.Fatalf("body %v", body)
	}
}

// A timeout, an error status, garbage and a private address without the
// allow list: the rules answer.
func TestChatFallsBack(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		answer func() string
		cfg    func(Config) Config
	}{
		{"timeout", 200, nil, func(c Config) Config { c.Timeout = 200 * time.Millisecond; return c }},
		{"status 500", 500, func() string { return `{"error":{"message":"overloaded"}}` }, nil},
		{"not json", 200, func() string { return "<html>gateway</html>" }, nil},
		{"content not json", 200, func() string { return completion("Sure! Here are some ideas: 1. New stuff") }, nil},
		{"wrong shape", 200, func() string { return completion(`{"suggestions":"many"}`) }, nil},
		{"no choices", 200, func() string { return `{"choices":[]}` }, nil},
		{"empty suggestions", 200, func() string { return completion(`{"suggestions":[]}`) }, nil},
		{"private address", 200, func() string { return completion(`{"suggestions":[{"title":"a","message":"b","why":"c"}]}`) },
			func(c Config) Config {
				c.Allow = netpolicy.AllowList{}
				c.URL = strings.Replace(c.URL, "http:", "https:", 1)
				return c
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeAI(t, c.status, c.answer)
			cfg := f.config(t)
			if c.cfg != nil {
				cfg = c.cfg(cfg)
			}
			s, err := New(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Suggest(context.Background(), input)
			if err != nil || !reflect.DeepEqual(got, rulesFor(input)) {
				t.Fatalf("%v %#v", err, got)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if c.name == "private address" && len(f.bodies) != 0 {
				t.Fatal("the private address was called")
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, u := range []string{"http://api.example/v1", "ftp://x", "https://user:pw@api.example", "not a url"} {
		if err := (Config{URL: u}).Validate(); err == nil {
			t.Errorf("%s: valid", u)
		}
	}
	if s, err := New(Config{}, nil); err != nil || s != (Rules{}) {
		t.Fatalf("no url: %v %v", s, err)
	}
}

// FuzzParseAnswer: any answer is suggestions within bounds or an error,
// never a panic.
func FuzzParseAnswer(f *testing.F) {
	f.Add([]byte(completion(`{"suggestions":[{"title":"a","message":"b","why":"c"}]}`)))
	f.Add([]byte(completion("```json\n{\"suggestions\":[]}\n```")))
	f.Add([]byte(`{"choices":[{"message":{"content":"}{"}}]}`))
	f.Add([]byte(`{"choices":null}`))
	f.Add([]byte(`garbage`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseAnswer(data)
		if err != nil {
			return
		}
		if len(got) == 0 || len(got) > maxSuggestions {
			t.Fatalf("%d suggestions", len(got))
		}
		for _, s := range got {
			if s.Title == "" || s.Why == "" || runes(s.Title) > maxTitleChars || runes(s.Message) > maxMessageChars {
				t.Fatalf("%#v", s)
			}
		}
	})
}
