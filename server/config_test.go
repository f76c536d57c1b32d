package server

import (
	"context"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestValidateClusterCombinations pins which role and backend combinations
// a node accepts, and the message of each refusal.
func TestValidateClusterCombinations(t *testing.T) {
	cluster := func(roles string) Config {
		return Config{Roles: roles, HTTPAddr: ":0", Postgres: "postgres://x", Kafka: "k:9092", ClickHouse: "c:9000",
			Join: "seed:7946", InternalAddr: ":8081", ClusterToken: "t"}
	}
	cases := []struct {
		name string
		edit func(*Config)
		base Config
		want string // "" accepts
	}{
		{"embedded default", nil, Config{Roles: "all", HTTPAddr: ":8080"}, ""},
		{"cluster pusher", nil, cluster("pusher"), ""},
		{"cluster fanout", nil, cluster("fanout"), ""},
		{"cluster api without ring", func(c *Config) { c.Join, c.ClusterToken = "", "" }, cluster("api"), ""},
		{"join without clickhouse", func(c *Config) { c.ClickHouse = "" }, cluster("pusher"), "--join needs --postgres, --kafka and --clickhouse"},
		{"join without postgres", func(c *Config) { c.Postgres = "" }, cluster("fanout"), "--join needs --postgres, --kafka and --clickhouse"},
		{"clickhouse without kafka", func(c *Config) { c.Join, c.ClusterToken, c.Kafka = "", "", "" }, cluster("api,fanout,pusher"), "--clickhouse needs --kafka"},
		{"pusher without token", func(c *Config) { c.ClusterToken = "" }, cluster("pusher"), "--cluster-token is required"},
		{"fanout without token", func(c *Config) { c.ClusterToken = "" }, cluster("fanout"), "--cluster-token is required"},
		{"pusher without internal", func(c *Config) { c.InternalAddr = "" }, cluster("pusher"), "needs --internal"},
		{"fanout without ring or pusher", nil, Config{Roles: "fanout", HTTPAddr: ":0"}, "a fan-out node needs pushers"},
		{"pusher without ring or fanout", nil, Config{Roles: "pusher", HTTPAddr: ":0"}, "a pusher node gets batches only from a cluster"},
		{"api on the embedded bus alone", nil, Config{Roles: "api", HTTPAddr: ":0"}, "an api node on the embedded bus needs the fanout role"},
		{"fanout and pusher in one process", nil, Config{Roles: "fanout, pusher", HTTPAddr: ":0"}, ""},
		{"unknown role", nil, Config{Roles: "api,mailer", HTTPAddr: ":0"}, `unknown role "mailer"`},
		{"no role", nil, Config{Roles: " , ", HTTPAddr: ":0"}, "no role to run"},
	}
	for _, tc := range cases {
		c := tc.base
		if tc.edit != nil {
			tc.edit(&c)
		}
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestMalformedEnvironment sets each numeric, boolean and duration flag's
// RELAYBELL_* variable to a value it cannot read: the start must fail
// naming the variable, never read it as zero. The variables come from the
// flag set itself, so a new one is covered when it is added.
func TestMalformedEnvironment(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	new(Config).RegisterFlags(fs)
	envOf := regexp.MustCompile(`\(env (RELAYBELL_[A-Z_]+)\)`)
	typed := map[string]string{} // variable → a good value of its type
	fs.VisitAll(func(f *flag.Flag) {
		m := envOf.FindStringSubmatch(f.Usage)
		if m == nil {
			t.Errorf("flag --%s names no RELAYBELL_* variable", f.Name)
			return
		}
		switch f.Value.(flag.Getter).Get().(type) {
		case bool:
			typed[m[1]] = "true"
		case int:
			typed[m[1]] = "-1"
		case time.Duration:
			typed[m[1]] = "90s"
		}
	})
	for _, name := range []string{"RELAYBELL_TRUST_PROXY", "RELAYBELL_KAFKA_SESSION_TIMEOUT", "RELAYBELL_KAFKA_REBALANCE_TIMEOUT",
		"RELAYBELL_REVIEW_THRESHOLD", "RELAYBELL_PUBLIC_RATE_LIMIT", "RELAYBELL_COMMERCE_RATE_LIMIT", "RELAYBELL_EVENT_RATE_LIMIT", "RELAYBELL_SESSION_IDLE",
		"RELAYBELL_SESSION_MAX_AGE", "RELAYBELL_SHUTDOWN_GRACE"} {
		if _, ok := typed[name]; !ok {
			t.Errorf("%s is not among the typed variables %v", name, typed)
		}
	}
	want := map[string]string{"true": "true or false", "-1": "a whole number", "90s": "a duration with its unit"}
	for name, good := range typed {
		for _, bad := range []string{"7d", " 1", "yes please", "1e3", "١٢"} {
			t.Run(name+"="+bad, func(t *testing.T) {
				t.Setenv(name, bad)
				c := Config{}
				c.RegisterFlags(flag.NewFlagSet("serve", flag.ContinueOnError))
				c.Roles, c.HTTPAddr = All, ":0"
				err := c.Validate()
				if msg := fmt.Sprintf("%s=%q is not %s", name, bad, want[good]); err == nil || !strings.HasPrefix(err.Error(), msg) {
					t.Fatalf("Validate() = %v, want %q", err, msg)
				}
			})
		}
		t.Run(name+" empty", func(t *testing.T) { // as unset
			t.Setenv(name, "")
			c := Config{Roles: All, HTTPAddr: ":0"}
			c.RegisterFlags(flag.NewFlagSet("serve", flag.ContinueOnError))
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate() = %v", err)
			}
		})
		t.Run(name+"="+good, func(t *testing.T) {
			t.Setenv(name, good)
			c := Config{}
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			c.RegisterFlags(fs)
			if got := fs.Lookup(flagOf(t, fs, name)).Value.String(); got != good && !(good == "90s" && got == "1m30s") {
				t.Errorf("read %s=%s as %s", name, good, got)
			}
		})
	}

	// Through the command: the start fails with the name, before any store
	// is opened.
	t.Setenv("RELAYBELL_SESSION_IDLE", "7d")
	var stderr strings.Builder
	err := Main(context.Background(), []string{"serve", "--data", t.TempDir(), "--http", "127.0.0.1:0"}, io.Discard, &stderr)
	if err == nil || err.Error() != `RELAYBELL_SESSION_IDLE="7d" is not a duration with its unit, such as 90s, 15m or 168h` {
		t.Fatalf("serve with RELAYBELL_SESSION_IDLE=7d: %v", err)
	}
	t.Setenv("RELAYBELL_SESSION_IDLE", "168h")
	t.Setenv("RELAYBELL_LOG_LEVEL", "verbose")
	err = Main(context.Background(), []string{"serve", "--data", t.TempDir(), "--http", "127.0.0.1:0"}, io.Discard, &stderr)
	if err == nil || err.Error() != `--log-level or RELAYBELL_LOG_LEVEL "verbose" is not debug, info, warn or error` {
		t.Fatalf("serve with RELAYBELL_LOG_LEVEL=verbose: %v", err)
	}
}

func flagOf(t *testing.T, fs *flag.FlagSet, env string) string {
	t.Helper()
	var name string
	fs.VisitAll(func(f *flag.Flag) {
		if strings.Contains(f.Usage, "(env "+env+")") {
			name = f.Name
		}
	})
	if name == "" {
		t.Fatalf("no flag reads %s", env)
	}
	return name
}
