package server

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/relaybell/relaybell/fanout"
	"github.com/relaybell/relaybell/pusher"
)

// Config is the whole process configuration. Every flag also reads a
// RELAYBELL_* environment variable; flags win.
type Config struct {
	Roles          string // comma-separated module names; default "all"
	HTTPAddr       string
	DataDir        string
	AdminToken     string
	PushAllowHosts string
	NodeName       string
	CountryHeader  string
	ShutdownGrace  time.Duration

	// Cluster backends; empty means the embedded default.
	Postgres   string
	Kafka      string
	ClickHouse string
	Join       string

	Fanout fanout.Config
	Pusher pusher.Config
}

// RegisterFlags binds the configuration to flags, with defaults taken from
// the environment.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	str := func(p *string, name, env, def, usage string) {
		fs.StringVar(p, name, envOr(env, def), usage+" (env "+env+")")
	}
	str(&c.Roles, "roles", "RELAYBELL_ROLES", All, "modules to run: all, or a comma-separated list of api, fanout, pusher")
	str(&c.HTTPAddr, "http", "RELAYBELL_HTTP_ADDR", ":8080", "HTTP listen address")
	str(&c.DataDir, "data", "RELAYBELL_DATA_DIR", "./relaybell-data", "directory of the embedded storage")
	str(&c.AdminToken, "admin-token", "RELAYBELL_ADMIN_TOKEN", "", "bearer token of the operator admin API (off when empty)")
	str(&c.PushAllowHosts, "push-allow-hosts", "RELAYBELL_PUSH_ALLOW_HOSTS", "", "host:port list of push services allowed on private addresses")
	str(&c.NodeName, "node", "RELAYBELL_NODE", hostname(), "node name on the ring")
	str(&c.CountryHeader, "country-header", "RELAYBELL_COUNTRY_HEADER", "", "trusted proxy header carrying the visitor's country code")
	str(&c.Postgres, "postgres", "RELAYBELL_POSTGRES", "", "PostgreSQL URL (cluster mode)")
	str(&c.Kafka, "kafka", "RELAYBELL_KAFKA", "", "Kafka seed brokers (cluster mode)")
	str(&c.ClickHouse, "clickhouse", "RELAYBELL_CLICKHOUSE", "", "ClickHouse address (cluster mode)")
	str(&c.Join, "join", "RELAYBELL_JOIN", "", "memberlist seeds (cluster mode)")
	grace, _ := time.ParseDuration(envOr("RELAYBELL_SHUTDOWN_GRACE", "10s"))
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", grace, "time to finish requests on shutdown (env RELAYBELL_SHUTDOWN_GRACE)")
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if _, err := c.targets(); err != nil {
		return err
	}
	if c.HTTPAddr == "" {
		return errors.New("an HTTP address is required")
	}
	if c.Postgres != "" || c.Kafka != "" || c.ClickHouse != "" || c.Join != "" {
		return errors.New("cluster backends (--postgres, --kafka, --clickhouse, --join) are not available in this build yet; run without them for the embedded default")
	}
	if err := c.Fanout.Validate(); err != nil {
		return err
	}
	return c.Pusher.Validate()
}

func (c *Config) targets() ([]string, error) {
	var out []string
	for _, r := range strings.Split(c.Roles, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if _, ok := modules[r]; !ok || !targetable[r] {
			return nil, fmt.Errorf("unknown role %q (want all, api, fanout or pusher)", r)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, errors.New("no role to run")
	}
	return out, nil
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "relaybell"
	}
	return h
}
