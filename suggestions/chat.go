package suggestions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/relaybell/relaybell/netpolicy"
)

// Defaults of Config.
const (
	DefaultModel     = "gpt-4o-mini"
	DefaultTimeout   = 10 * time.Second
	DefaultMaxTokens = 600
)

// Bounds of an endpoint's answer taken as suggestions.
const (
	maxAnswerBytes   = 256 << 10
	maxSuggestions   = 6
	maxTitleChars    = 200
	maxMessageChars  = 1000
	maxWhyChars      = 500
	completionsRoute = "/chat/completions"
)

// Config configures the suggester New builds.
type Config struct {
	// URL is the OpenAI-compatible API's base URL, such as
	// https://api.openai.com/v1 (RELAYBELL_AI_URL), or its chat
	// completions URL. Empty: Rules alone.
	URL string
	// Key is sent as a Bearer token when set (RELAYBELL_AI_KEY).
	Key string
	// Model is the model asked for (RELAYBELL_AI_MODEL). Default
	// DefaultModel.
	Model string
	// Timeout bounds one call, from dialling to the last byte of the
	// answer (RELAYBELL_AI_TIMEOUT). Default 10s.
	Timeout time.Duration
	// MaxTokens is the token budget of an answer, sent as max_tokens
	// (RELAYBELL_AI_MAX_TOKENS). Default 600.
	MaxTokens int
	// Allow lists host:port pairs the endpoint may be on even at a private
	// address or over plain http (RELAYBELL_AI_ALLOW_HOSTS). Default none.
	Allow netpolicy.AllowList
}

// Validate reports a configuration New cannot use.
func (c Config) Validate() error {
	if c.URL == "" {
		return nil
	}
	u, err := url.Parse(c.URL)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && !(u.Scheme == "http" && c.Allow.Allows(netpolicy.HostPort(u)))) {
		return fmt.Errorf("ai url %q: want an https URL (plain http only for a host of the allow list)", c.URL)
	}
	if c.Timeout < 0 || c.MaxTokens < 0 {
		return errors.New("ai timeout and max tokens must not be negative")
	}
	return nil
}

// New is Rules when cfg names no endpoint, else a Chat that falls back to
// Rules.
func New(cfg Config, logger *slog.Logger) (Suggester, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.URL == "" {
		return Rules{}, nil
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	endpoint := strings.TrimRight(cfg.URL, "/")
	if !strings.HasSuffix(endpoint, completionsRoute) {
		endpoint += completionsRoute
	}
	dialer := &netpolicy.Dialer{Allow: cfg.Allow}
	return &Chat{cfg: cfg, endpoint: endpoint, fallback: Rules{}, log: logger, client: &http.Client{
		Timeout: cfg.Timeout,
		Transport: &http.Transport{
			Proxy:                 nil, // a proxy would dial for us, unchecked
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   cfg.Timeout,
			ResponseHeaderTimeout: cfg.Timeout,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// Chat asks an OpenAI-compatible chat completions endpoint, and Rules
// when it fails.
type Chat struct {
	cfg      Config
	endpoint string
	client   *http.Client
	fallback Suggester
	log      *slog.Logger
}

var _ Suggester = (*Chat)(nil)

// systemPrompt tells the model what to answer.
const systemPrompt = `You write web push notification copy. The user sends JSON {title, message, url?, language?, tone?}. ` +
	`Answer with JSON only, no prose: {"suggestions":[{"title":"...","message":"...","why":"..."}]}, 3 to 5 suggestions, ` +
	`in the language of the input. Keep titles within 40 characters and messages within 80 so that every platform shows them whole. ` +
	`Offer a shorter, a more urgent, a personalised (the merge tag {first_name|there} puts in the subscriber's first name) ` +
	`and a question form; "why" says in one sentence why each may do better.`

// Suggest asks the endpoint; any failure gives Rules' suggestions.
func (c *Chat) Suggest(ctx context.Context, in Input) ([]Suggestion, error) {
	out, err := c.ask(ctx, in)
	if err != nil {
		c.log.Warn("copy suggestions: the ai endpoint failed; the rules answer", "err", err)
		return c.fallback.Suggest(ctx, in)
	}
	return out, nil
}

func (c *Chat) ask(ctx context.Context, in Input) ([]Suggestion, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	user, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(map[string]any{
		"model":       c.cfg.Model,
		"max_tokens":  c.cfg.MaxTokens,
		"temperature": 0.7,
		"messages": []map[string]string{
			{"role": "system", "content": systemPrompt},
			{"role": "user", "content": string(user)},
		},
	})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Key)
	}
	res, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("calling %s: %w", c.endpoint, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxAnswerBytes))
		res.Body.Close()
	}()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("calling %s: status %d", c.endpoint, res.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if len(data) > maxAnswerBytes {
		return nil, errors.New("the answer is over 256 KB")
	}
	return ParseAnswer(data)
}

// ParseAnswer takes the suggestions out of a chat completions answer: the
// first choice's message content, which must hold the JSON object asked
// for (a Markdown code fence around it is tolerated). Anything else is an
// error, never a panic.
func ParseAnswer(data []byte) ([]Suggestion, error) {
	var ans struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &ans); err != nil {
		return nil, fmt.Errorf("the answer is not chat completions JSON: %w", err)
	}
	if len(ans.Choices) == 0 {
		return nil, errors.New("the answer has no choice")
	}
	content := strings.TrimSpace(ans.Choices[0].Message.Content)
	start, end := strings.IndexByte(content, '{'), strings.LastIndexByte(content, '}')
	if start < 0 || end < start {
		return nil, errors.New("the answer's content holds no JSON object")
	}
	var got struct {
		Suggestions []Suggestion `json:"suggestions"`
	}
	if err := json.Unmarshal([]byte(content[start:end+1]), &got); err != nil {
		return nil, fmt.Errorf("the answer's content is not the JSON asked for: %w", err)
	}
	var out []Suggestion
	for _, s := range got.Suggestions {
		s = Suggestion{Title: clean(s.Title), Message: clean(s.Message), Why: clean(s.Why)}
		if s.Title == "" || s.Why == "" || runes(s.Title) > maxTitleChars || runes(s.Message) > maxMessageChars || runes(s.Why) > maxWhyChars {
			continue
		}
		out = append(out, s)
		if len(out) == maxSuggestions {
			break
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the answer holds no usable suggestion")
	}
	return out, nil
}
