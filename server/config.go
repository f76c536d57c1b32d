package server

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/relaybell/relaybell/api"
	"github.com/relaybell/relaybell/automations"
	"github.com/relaybell/relaybell/fanout"
	"github.com/relaybell/relaybell/feeds"
	"github.com/relaybell/relaybell/pusher"
	"github.com/relaybell/relaybell/reports"
	"github.com/relaybell/relaybell/schedules"
	"github.com/relaybell/relaybell/suggestions"
)

// Config is the whole process configuration. Every flag also reads a
// RELAYBELL_* environment variable; flags win.
type Config struct {
	Roles          string // comma-separated module names; default "all"
	HTTPAddr       string
	DataDir        string
	AdminToken     string
	PushAllowHosts string
	// WebhookAllowHosts: host:port pairs webhook deliveries may reach on
	// private addresses.
	WebhookAllowHosts string
	// SMTP relay of the owners' e-mail (a webhook turned off); without an
	// address the messages wait in the outbox (GET /admin/v1/emails).
	SMTPAddr, SMTPFrom, SMTPUsername, SMTPPassword string
	NodeName                                       string
	CountryHeader                                  string
	TrustProxy                                     bool
	PublicURL                                      string
	ShutdownGrace                                  time.Duration
	// ReviewThreshold: see api.Config.ReviewThreshold.
	ReviewThreshold int
	// SessionIdle and SessionMaxAge: see accounts.Config (IdleTimeout,
	// MaxAge). PublicRateLimit, CommerceRateLimit, EventRateLimit,
	// NoSendLimits: see api.Config.
	// ProductAlertMax: see events.Config.AlertMax.
	SessionIdle, SessionMaxAge time.Duration
	PublicRateLimit            int
	CommerceRateLimit          int
	EventRateLimit             int
	NoSendLimits               bool
	ProductAlertMax            int
	// AI: the OpenAI-compatible chat completions endpoint of copy
	// suggestions (see suggestions.Config); no URL: the offline rules.
	AIURL, AIKey, AIModel, AIAllowHosts string
	AITimeout                           time.Duration
	AIMaxTokens                         int

	// Cluster backends; empty means the embedded default.
	Postgres   string
	Kafka      string
	ClickHouse string
	// Join lists memberlist seeds; set, the node joins the cluster's ring.
	Join string
	// GossipAddr is where memberlist listens (cluster mode).
	GossipAddr string
	// InternalAddr is where a pusher node takes batches from fan-out nodes
	// (cluster mode); keep it off the public network.
	InternalAddr string
	// AdvertiseHost is the host other nodes use to reach this one; default
	// the host of InternalAddr when it names one, else the machine's name.
	AdvertiseHost string
	// ClusterToken authenticates batches between nodes (cluster mode).
	ClusterToken string
	// KafkaSessionTimeout is how long a silent fan-out node keeps its
	// partitions before the group gives them to the others.
	KafkaSessionTimeout time.Duration
	// KafkaRebalanceTimeout is how long a rebalance of the fan-out nodes'
	// group waits for every member to rejoin; 0 is the client's default
	// (a minute). A member killed with SIGKILL never rejoins: devkafka
	// (kfake) keeps it until this runs out, and the partitions of every
	// node wait meanwhile (deploy's TestEngineSurvivesSIGKILL sets it
	// short). It also bounds how long a node may take to finish the batch
	// it holds when a rebalance begins.
	KafkaRebalanceTimeout time.Duration
	// KafkaReplicationFactor is the replication factor of the bus topics
	// a node creates when they are missing (kafka.Config.ReplicationFactor):
	// 1 fits a single broker; a Kafka that must survive a broker's loss
	// needs 3. 0 is 1.
	KafkaReplicationFactor int

	Fanout fanout.Config
	Pusher pusher.Config
	// Automations tunes the automations engine: its poll, lease and batch.
	// Its clock is Now.
	Automations automations.Config
	// Schedules tunes the recurring schedules' engine: its poll, lease and
	// batch. Its clock is Now; NoSendLimits turns its budget off too.
	Schedules schedules.Config
	// Reports tunes the reports' engine: its poll and lease.
	Reports reports.Config
	// Feeds tunes the feeds' poller: its look interval, lease and
	// workers. Its clock is Now; its fetches use WebhookAllowHosts.
	Feeds feeds.Config
	// Now is the clock of the API and of the automations engine; default
	// time.Now. Tests move it instead of waiting through an automation's
	// delays.
	Now func() time.Time

	// envErrs holds the RELAYBELL_* values RegisterFlags could not read;
	// Validate refuses to start with any (a typo is never read as zero).
	envErrs []error
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
	str(&c.WebhookAllowHosts, "webhook-allow-hosts", "RELAYBELL_WEBHOOK_ALLOW_HOSTS", "", "host:port list of webhook receivers allowed on private addresses")
	str(&c.AIURL, "ai-url", "RELAYBELL_AI_URL", "", "base URL of an OpenAI-compatible chat completions API for copy suggestions, such as https://api.openai.com/v1 (default: the offline rules)")
	str(&c.AIKey, "ai-key", "RELAYBELL_AI_KEY", "", "bearer key of the copy suggestions API")
	str(&c.AIModel, "ai-model", "RELAYBELL_AI_MODEL", suggestions.DefaultModel, "model the copy suggestions API is asked for")
	str(&c.AIAllowHosts, "ai-allow-hosts", "RELAYBELL_AI_ALLOW_HOSTS", "", "host:port list the copy suggestions API may be on at a private address or over plain http")
	str(&c.SMTPAddr, "smtp", "RELAYBELL_SMTP_ADDR", "", "SMTP relay host:port for owner e-mail (default: keep it in the outbox)")
	str(&c.SMTPFrom, "smtp-from", "RELAYBELL_SMTP_FROM", "relaybell@localhost", "sender address of owner e-mail")
	str(&c.SMTPUsername, "smtp-user", "RELAYBELL_SMTP_USERNAME", "", "SMTP user name")
	str(&c.SMTPPassword, "smtp-password", "RELAYBELL_SMTP_PASSWORD", "", "SMTP password")
	str(&c.NodeName, "node", "RELAYBELL_NODE", hostname(), "node name on the ring")
	str(&c.CountryHeader, "country-header", "RELAYBELL_COUNTRY_HEADER", "", "trusted proxy header carrying the visitor's country code")
	fs.BoolVar(&c.TrustProxy, "trust-proxy", c.envBool("RELAYBELL_TRUST_PROXY", false), "behind a reverse proxy: the visitor is the last public X-Forwarded-For address (the one a proxy added), the scheme X-Forwarded-Proto (env RELAYBELL_TRUST_PROXY)")
	str(&c.PublicURL, "public-url", "RELAYBELL_PUBLIC_URL", "", "URL browsers reach the API at, written into sdk.js and sw.js (default: each request's scheme and Host)")
	str(&c.Postgres, "postgres", "RELAYBELL_POSTGRES", "", "PostgreSQL URL (cluster mode)")
	str(&c.Kafka, "kafka", "RELAYBELL_KAFKA", "", "Kafka seed brokers (cluster mode)")
	str(&c.ClickHouse, "clickhouse", "RELAYBELL_CLICKHOUSE", "", "ClickHouse address (cluster mode)")
	str(&c.Join, "join", "RELAYBELL_JOIN", "", "comma-separated memberlist seeds, host:port (cluster mode)")
	str(&c.GossipAddr, "gossip", "RELAYBELL_GOSSIP_ADDR", ":7946", "memberlist listen address (cluster mode)")
	str(&c.InternalAddr, "internal", "RELAYBELL_INTERNAL_ADDR", ":8081", "address where a pusher takes batches from fan-out nodes (cluster mode)")
	str(&c.AdvertiseHost, "advertise", "RELAYBELL_ADVERTISE_HOST", "", "host other nodes use to reach this one (default: the --internal host, else the machine name)")
	str(&c.ClusterToken, "cluster-token", "RELAYBELL_CLUSTER_TOKEN", "", "shared secret of the nodes' internal batch route (cluster mode)")
	fs.DurationVar(&c.KafkaSessionTimeout, "kafka-session-timeout", c.envDuration("RELAYBELL_KAFKA_SESSION_TIMEOUT", 10*time.Second), "how long a silent fan-out node keeps its Kafka partitions (env RELAYBELL_KAFKA_SESSION_TIMEOUT)")
	fs.DurationVar(&c.KafkaRebalanceTimeout, "kafka-rebalance-timeout", c.envDuration("RELAYBELL_KAFKA_REBALANCE_TIMEOUT", 0), "how long a rebalance of the fan-out nodes' Kafka group waits for every member to rejoin; 0 is the client's default, a minute (env RELAYBELL_KAFKA_REBALANCE_TIMEOUT)")
	fs.IntVar(&c.KafkaReplicationFactor, "kafka-replication-factor", c.envInt("RELAYBELL_KAFKA_REPLICATION_FACTOR", 1), "replication factor of the Kafka topics a node creates when they are missing; 3 for a Kafka that survives a broker's loss (env RELAYBELL_KAFKA_REPLICATION_FACTOR)")
	fs.IntVar(&c.ReviewThreshold, "review-threshold", c.envInt("RELAYBELL_REVIEW_THRESHOLD", api.DefaultReviewThreshold), "audience in browsers from which a new account's first broadcast is held for review; negative turns review off (env RELAYBELL_REVIEW_THRESHOLD)")
	fs.IntVar(&c.PublicRateLimit, "public-rate-limit", c.envInt("RELAYBELL_PUBLIC_RATE_LIMIT", api.DefaultPublicRateLimit), "requests a minute each visitor address may make to the browser SDK routes and pings, counted across the nodes; negative turns the limit off (env RELAYBELL_PUBLIC_RATE_LIMIT)")
	fs.IntVar(&c.CommerceRateLimit, "commerce-rate-limit", c.envInt("RELAYBELL_COMMERCE_RATE_LIMIT", api.DefaultCommerceRateLimit), "requests a minute each address may make to the commerce receivers (Shopify, WooCommerce), counted across the nodes; negative turns the limit off (env RELAYBELL_COMMERCE_RATE_LIMIT)")
	fs.IntVar(&c.EventRateLimit, "event-rate-limit", c.envInt("RELAYBELL_EVENT_RATE_LIMIT", api.DefaultEventRateLimit), "calls of POST and GET /events a minute each API key may make, counted across the nodes; negative turns the limit off (env RELAYBELL_EVENT_RATE_LIMIT)")
	fs.BoolVar(&c.NoSendLimits, "no-send-limits", c.envBool("RELAYBELL_NO_SEND_LIMITS", false), "turn off the send rates per API key and the hourly send budgets per website, for load runs only (env RELAYBELL_NO_SEND_LIMITS)")
	fs.DurationVar(&c.AITimeout, "ai-timeout", c.envDuration("RELAYBELL_AI_TIMEOUT", suggestions.DefaultTimeout), "how long a copy suggestion waits for the AI API before the offline rules answer (env RELAYBELL_AI_TIMEOUT)")
	fs.IntVar(&c.AIMaxTokens, "ai-max-tokens", c.envInt("RELAYBELL_AI_MAX_TOKENS", suggestions.DefaultMaxTokens), "token budget (max_tokens) of one copy suggestions answer (env RELAYBELL_AI_MAX_TOKENS)")
	fs.DurationVar(&c.SessionIdle, "session-idle", c.envDuration("RELAYBELL_SESSION_IDLE", 168*time.Hour), "a dashboard session not used for this long ends (env RELAYBELL_SESSION_IDLE)")
	fs.DurationVar(&c.SessionMaxAge, "session-max-age", c.envDuration("RELAYBELL_SESSION_MAX_AGE", 720*time.Hour), "every dashboard session ends this long after sign-in (env RELAYBELL_SESSION_MAX_AGE)")
	fs.DurationVar(&c.Feeds.Lease, "feeds-lease", c.envDuration("RELAYBELL_FEEDS_LEASE", 2*time.Minute), "how long a node holds a feed it polls before another may poll it (the node died); more than a fetch's 20s timeout (env RELAYBELL_FEEDS_LEASE)")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", c.envDuration("RELAYBELL_SHUTDOWN_GRACE", 10*time.Second), "time to finish requests on shutdown (env RELAYBELL_SHUTDOWN_GRACE)")
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if err := errors.Join(c.envErrs...); err != nil {
		return err
	}
	if _, err := c.targets(); err != nil {
		return err
	}
	if c.HTTPAddr == "" {
		return errors.New("an HTTP address is required")
	}
	if c.KafkaReplicationFactor < 0 || c.KafkaReplicationFactor > 32767 {
		return fmt.Errorf("--kafka-replication-factor %d is not between 1 and 32767", c.KafkaReplicationFactor)
	}
	if c.SessionIdle < 0 || c.SessionMaxAge < 0 {
		return errors.New("session lifetimes must not be negative")
	}
	runs := c.runs
	switch {
	case c.Join != "" && (c.Postgres == "" || c.Kafka == "" || c.ClickHouse == ""):
		return errors.New("--join needs --postgres, --kafka and --clickhouse: the nodes of a cluster share their store, bus and analytics")
	case c.ClickHouse != "" && c.Kafka == "":
		return errors.New("--clickhouse needs --kafka: events reach ClickHouse through Kafka")
	case c.Join != "" && (runs(Pusher) || runs(Fanout)) && c.ClusterToken == "":
		return errors.New("--cluster-token is required on pusher and fan-out nodes of a cluster")
	case c.Join != "" && runs(Pusher) && c.InternalAddr == "":
		return errors.New("a pusher node of a cluster needs --internal")
	case c.Join == "" && runs(Fanout) && !runs(Pusher):
		return errors.New("a fan-out node needs pushers: run the pusher role too, or --join a cluster")
	case c.Join == "" && runs(Pusher) && !runs(Fanout):
		return errors.New("a pusher node gets batches only from a cluster: --join one, or run the fanout role too")
	case c.Kafka == "" && !runs(Fanout) && c.Join == "" && runs(API):
		// api alone on the embedded bus: its sends would wait for a fan-out
		// that never reads them.
		return errors.New("an api node on the embedded bus needs the fanout role in the same process, or --kafka")
	}
	if err := c.Fanout.Validate(); err != nil {
		return err
	}
	return c.Pusher.Validate()
}

func (c *Config) targets() ([]string, error) {
	out := splitList(c.Roles)
	for _, r := range out {
		if _, ok := modules[r]; !ok || !targetable[r] {
			return nil, fmt.Errorf("unknown role %q (want all, api, fanout or pusher)", r)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no role to run")
	}
	return out, nil
}

// runs reports whether the node runs role (directly or through "all").
func (c *Config) runs(role string) bool {
	targets, _ := c.targets()
	return slices.Contains(targets, role) || slices.Contains(targets, All)
}

// envInt, envBool and envDuration read a typed RELAYBELL_* variable, def
// when it is unset or empty; a value that does not parse is kept for Validate,
// named with the variable, and def is returned meanwhile.
func (c *Config) envInt(name string, def int) int {
	return envParse(c, name, def, strconv.Atoi, "a whole number, such as 100 or -1")
}

func (c *Config) envBool(name string, def bool) bool {
	return envParse(c, name, def, strconv.ParseBool, "true or false")
}

func (c *Config) envDuration(name string, def time.Duration) time.Duration {
	return envParse(c, name, def, time.ParseDuration, "a duration with its unit, such as 90s, 15m or 168h")
}

func envParse[T any](c *Config, name string, def T, parse func(string) (T, error), want string) T {
	s := os.Getenv(name)
	if s == "" { // unset, or set empty as a chart may render it
		return def
	}
	v, err := parse(s)
	if err != nil {
		c.envErrs = append(c.envErrs, fmt.Errorf("%s=%q is not %s", name, s, want))
		return def
	}
	return v
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
