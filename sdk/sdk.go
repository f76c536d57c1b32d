package sdk

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"net/url"
)

// Script names one of the embedded scripts.
type Script string

// The scripts, named as their routes end.
const (
	// SDK is the page script: it registers the website's worker, asks for
	// permission, subscribes and registers the subscription.
	SDK Script = "sdk.js"
	// Worker is the service worker code: it shows pushes, dedupes them and
	// sends the delivered and clicked pings.
	Worker Script = "sw.js"
)

//go:embed sdk.js sw.js
var files embed.FS

// placeholder is the string literal in each script that Render replaces
// with the base URL, quoted.
const placeholder = `"__RELAYBELL_BASE__"`

// Render returns script s for the project whose SDK routes are under base,
// an absolute http(s) URL such as
// "https://push.example.com/api/v1/projects/<projectId>".
func Render(s Script, base string) ([]byte, error) {
	src, err := files.ReadFile(string(s))
	if err != nil {
		return nil, fmt.Errorf("sdk: no script %q", s)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("sdk: base %q is not an absolute http(s) URL", base)
	}
	// JSON quoting escapes <, > and & too, so the URL cannot end the
	// string or the script.
	quoted, err := json.Marshal(base)
	if err != nil {
		return nil, fmt.Errorf("sdk: quoting base: %w", err)
	}
	return bytes.Replace(src, []byte(placeholder), quoted, 1), nil
}
