// Package suggestions makes copy suggestions for a notification's title
// and message (issue 36, item 6): POST /ai/suggest.
//
// Rules is the default, and runs offline with nothing to download: a
// deterministic set of rules, not a language model. It fits the texts to
// what the major platforms show (Platforms: how much of a title and a
// message each shows before cutting), and offers a shorter, a more
// urgent, a personalised (merge tag) and a question form, each with why.
// The same input always gives the same suggestions.
//
// Chat asks an OpenAI-compatible chat completions endpoint instead, when
// the operator configures one (RELAYBELL_AI_URL, RELAYBELL_AI_KEY): within
// a timeout and a token budget (max_tokens), and it falls back to Rules on
// any failure: no answer in time, an error status, or an answer that is
// not the JSON it asked for. The endpoint is the operator's, yet it is
// dialled through netpolicy like webhooks: a name that resolves to a
// private address is refused unless its host:port is in
// RELAYBELL_AI_ALLOW_HOSTS (a model served on the machine itself or the
// cluster's network must be listed there), so a configuration mistake or
// a changed DNS record cannot turn the suggester into a way into the
// internal network.
//
// The package stores nothing and never lets a failure of the endpoint
// reach the caller.
package suggestions
