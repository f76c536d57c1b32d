package webpush

import "testing"

// A push service is named by its endpoint's host, from a fixed set.
func TestServiceOf(t *testing.T) {
	for endpoint, want := range map[string]string{
		"https://fcm.googleapis.com/fcm/send/abc":                "fcm",
		"https://android.googleapis.com/gcm/send/abc":            "fcm",
		"https://updates.push.services.mozilla.com/wpush/v2/abc": "mozilla",
		"https://web.push.apple.com/QGuQyavXutnMH":               "apple",
		"https://api.push.apple.com/3/device/x":                  "apple",
		"https://wns2-by3p.notify.windows.com/w/?token=abc":      "wns",
		"https://FCM.googleapis.com/fcm/send/abc":                "fcm",
		"https://push.example.com/fcm.googleapis.com":            "other",
		"https://evil.push.apple.com.example/x":                  "other",
		"https://notgoogleapis.com/x":                            "other",
		"https://127.0.0.1:8443/push/abc":                        "other",
		"not a url \x7f":                                         "other",
	} {
		if got := ServiceOf(endpoint); got != want {
			t.Errorf("ServiceOf(%q) = %q, want %q", endpoint, got, want)
		}
	}
}
