package server

import (
	"flag"
	"io"
	"testing"
)

// TestSendLimitsFlag: the send limits are on unless turned off by
// RELAYBELL_SEND_LIMITS=off (or false) or --no-send-limits.
func TestSendLimitsFlag(t *testing.T) {
	parse := func(env string, args ...string) bool {
		t.Helper()
		t.Setenv("RELAYBELL_SEND_LIMITS", env)
		var c Config
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return c.NoSendLimits
	}
	for _, tc := range []struct {
		env  string
		args []string
		want bool
	}{
		{"", nil, false},
		{"on", nil, false},
		{"off", nil, true},
		{"false", nil, true},
		{"", []string{"--no-send-limits"}, true},
		{"off", []string{"--no-send-limits=false"}, false},
	} {
		if got := parse(tc.env, tc.args...); got != tc.want {
			t.Errorf("RELAYBELL_SEND_LIMITS=%q %v: NoSendLimits %v, want %v", tc.env, tc.args, got, tc.want)
		}
	}
}
