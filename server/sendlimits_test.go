package server

import (
	"flag"
	"io"
	"testing"
)

// TestSendLimitsFlag: the send limits are on unless turned off by
// RELAYBELL_NO_SEND_LIMITS=true or --no-send-limits.
func TestSendLimitsFlag(t *testing.T) {
	parse := func(env string, args ...string) bool {
		t.Helper()
		t.Setenv("RELAYBELL_NO_SEND_LIMITS", env)
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
		{"false", nil, false},
		{"true", nil, true},
		{"1", nil, true},
		{"", []string{"--no-send-limits"}, true},
		{"true", []string{"--no-send-limits=false"}, false},
	} {
		if got := parse(tc.env, tc.args...); got != tc.want {
			t.Errorf("RELAYBELL_NO_SEND_LIMITS=%q %v: NoSendLimits %v, want %v", tc.env, tc.args, got, tc.want)
		}
	}
}
