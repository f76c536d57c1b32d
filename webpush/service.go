package webpush

import (
	"net/url"
	"strings"
)

// Services are ServiceOf's answers: the push services by name, and other.
var Services = []string{"fcm", "mozilla", "apple", "wns", "other"}

// ServiceOf names the push service of an endpoint URL by its host: fcm
// (Google), mozilla, apple, wns (Windows) or other. The set is fixed, so a
// metric label stays bounded whatever browsers register; the API shows it
// as an endpoint's type.
func ServiceOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "other"
	}
	h := strings.ToLower(u.Hostname())
	under := func(domain string) bool { return h == domain || strings.HasSuffix(h, "."+domain) }
	switch {
	case under("googleapis.com"):
		return "fcm"
	case under("mozilla.com"):
		return "mozilla"
	case under("push.apple.com"):
		return "apple"
	case under("notify.windows.com"):
		return "wns"
	}
	return "other"
}
