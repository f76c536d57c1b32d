package notification

import (
	"fmt"
	"net/url"
)

// IsHTTPURL reports whether s is an absolute http or https URL with a host
// (the scheme in any case). It is the one check of a link RelayBell keeps:
// a send's links, a website's address and links, a webhook's URL.
func IsHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// checkLinks refuses a send whose link members are not all blank or
// absolute http(s) URLs (400 invalid_url naming the first bad member):
// url, icon, image, badge, every button's url, and version B's url and
// image. The url members, whose merge tags the pusher fills, are checked
// with every tag at its fallback; the others go out as written and are
// checked so. Translations carry no link.
func checkLinks(r *Request) error {
	type link struct {
		name   string
		value  *string
		merged bool
	}
	links := []link{{"url", r.URL, true}, {"icon", r.Icon, false}, {"image", r.Image, false}, {"badge", r.Badge, false}}
	for i := range r.Actions {
		links = append(links, link{fmt.Sprintf("actions[%d].url", i), &r.Actions[i].URL, false})
	}
	if r.AB != nil && r.AB.B != nil {
		links = append(links, link{"ab.b.url", r.AB.B.URL, true}, link{"ab.b.image", r.AB.B.Image, false})
	}
	for _, l := range links {
		if l.value == nil || *l.value == "" {
			continue
		}
		s := *l.value
		if l.merged {
			s = mergeTags(s, nil, true)
		}
		if !IsHTTPURL(s) {
			return &Error{Code: "invalid_url", Message: l.name + " must be an absolute http(s) link"}
		}
	}
	return nil
}
