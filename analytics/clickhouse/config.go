package clickhouse

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
)

// Config says which ClickHouse to use.
type Config struct {
	// Addr is host:port of the native protocol (the server's tcp_port,
	// 9000 by default), or several separated by commas. Required.
	Addr string
	// Database holds the events table; created when missing. Default "relaybell".
	Database string
	// Username defaults to "default"; Password defaults to empty.
	Username string
	Password string
}

// Defaults.
const (
	DefaultDatabase = "relaybell"
	DefaultUsername = "default"
)

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (c Config) withDefaults() Config {
	if c.Database == "" {
		c.Database = DefaultDatabase
	}
	if c.Username == "" {
		c.Username = DefaultUsername
	}
	return c
}

func (c Config) addrs() []string {
	var out []string
	for _, a := range strings.Split(c.Addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Validate reports whether c (with defaults applied) can be used.
func (c Config) Validate() error {
	c = c.withDefaults()
	addrs := c.addrs()
	if len(addrs) == 0 {
		return errors.New("clickhouse: addr is required (host:port of the native protocol)")
	}
	for _, a := range addrs {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return fmt.Errorf("clickhouse: addr %q is not host:port", a)
		}
	}
	if !identifier.MatchString(c.Database) {
		return fmt.Errorf("clickhouse: database %q must be letters, digits and underscores", c.Database)
	}
	return nil
}
