package server

import (
	"strings"
	"testing"
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
