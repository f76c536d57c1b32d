package webpush

import (
	"net/url"
	"testing"
)

// FuzzSplitEndpoint: whenever splitEndpoint takes an endpoint, url.Parse
// takes it too, as an absolute http(s) URL without a user, with the same
// origin and request target.
func FuzzSplitEndpoint(f *testing.F) {
	for _, s := range []string{
		"https://fcm.googleapis.com/fcm/send/dGVzdA:APA91b-x_y~z",
		"https://updates.push.services.mozilla.com/wpush/v2/gAAAAABk",
		"http://127.0.0.1:8443/push/1", "https://host", "https://host:", "https://:80/x", "https://a@b/x",
		"https://host/p?q=1", "https://host/p#f", "https://host/%41", "HTTPS://host/x", "https://[::1]:80/x",
		"https://host//x/../y", "https://host/a;b=c,d$e&f+g@h:i",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, endpoint string) {
		origin, path, ok := splitEndpoint(endpoint)
		if !ok {
			return
		}
		u, err := url.Parse(endpoint)
		if err != nil {
			t.Fatalf("splitEndpoint took %q, url.Parse: %v", endpoint, err)
		}
		if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			t.Fatalf("splitEndpoint took %q, which is not an absolute http(s) URL", endpoint)
		}
		if want := u.Scheme + "://" + u.Host; origin != want {
			t.Fatalf("%q: origin %q, want %q", endpoint, origin, want)
		}
		if want := u.RequestURI(); path != want {
			t.Fatalf("%q: path %q, want %q", endpoint, path, want)
		}
	})
}

// TestSplitEndpointTakesPushServices: the endpoints of the push services
// in use take the short way.
func TestSplitEndpointTakesPushServices(t *testing.T) {
	for _, e := range []string{
		"https://fcm.googleapis.com/fcm/send/dGVzdA:APA91bHPRgkF-JmHsW_x",
		"https://updates.push.services.mozilla.com/wpush/v2/gAAAAABkZ-1x_2",
		"https://web.push.apple.com/QGz1x-2_3",
		"https://wns2-par02p.notify.windows.com/w/?token=BQYAAA",
		"https://127.0.0.1:18089/push/42",
	} {
		_, _, ok := splitEndpoint(e)
		if want := e != "https://wns2-par02p.notify.windows.com/w/?token=BQYAAA"; ok != want { // a query goes through url.Parse
			t.Errorf("splitEndpoint(%q) ok = %v, want %v", e, ok, want)
		}
	}
}
