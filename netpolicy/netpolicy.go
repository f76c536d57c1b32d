package netpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// ErrPrivateAddress is returned when a URL or dialled address is not public.
var ErrPrivateAddress = errors.New("address is not public")

// AllowList holds host:port pairs that may be reached even on private
// addresses and over plain http (tests and on-premises push services).
type AllowList struct {
	hosts map[string]bool
}

// ParseAllowList parses a comma-separated list of host:port pairs.
func ParseAllowList(csv string) (AllowList, error) {
	var a AllowList
	for _, item := range strings.Split(csv, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		host, port, err := net.SplitHostPort(item)
		if err != nil || host == "" || port == "" {
			return AllowList{}, fmt.Errorf("allow-list entry %q: want host:port", item)
		}
		if a.hosts == nil {
			a.hosts = make(map[string]bool)
		}
		a.hosts[strings.ToLower(net.JoinHostPort(host, port))] = true
	}
	return a, nil
}

// Allows reports whether host:port is on the list.
func (a AllowList) Allows(hostport string) bool {
	return a.hosts[strings.ToLower(hostport)]
}

// IsPublic reports whether ip is a public unicast address: not loopback,
// private, link-local, unique-local, CGNAT, multicast, unspecified or
// reserved, in IPv4, IPv6 and IPv4-mapped IPv6 forms.
func IsPublic(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsUnspecified() || ip.IsLoopback() || ip.IsPrivate() ||
		ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("fc00::/7"),        // unique-local
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}

// CheckPushEndpoint is the registration-time check of a push endpoint URL:
// https on a host that is not a literal private address or a local name,
// unless its host:port is allow-listed (then plain http is fine too).
func CheckPushEndpoint(rawURL string, allow AllowList) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("endpoint is not an absolute URL")
	}
	if allow.Allows(HostPort(u)) && (u.Scheme == "https" || u.Scheme == "http") {
		return nil
	}
	if u.Scheme != "https" {
		return fmt.Errorf("endpoint must use https")
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if ip, err := netip.ParseAddr(host); err == nil {
		if !IsPublic(ip) {
			return ErrPrivateAddress
		}
		return nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || strings.HasSuffix(host, ".local") ||
		strings.HasSuffix(host, ".internal") || !strings.Contains(host, ".") {
		return ErrPrivateAddress
	}
	return nil
}

// HostPort is u's host and port, the port its scheme's default (443,
// or 80 for http) when u names none: what an AllowList holds.
func HostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// dialTimeout bounds connecting to one address, so an address that drops
// packets leaves time for the next.
const dialTimeout = 10 * time.Second

// Dialer wraps a dial function so that only public addresses (or
// allow-listed host:port pairs) are connected to. The check runs on the
// resolved address right before connecting, so DNS rebinding cannot get
// around it.
type Dialer struct {
	Allow    AllowList
	Resolver *net.Resolver
	Dial     func(ctx context.Context, network, addr string) (net.Conn, error)
}

// DialContext resolves addr, refuses non-public addresses that are not
// allow-listed, and dials the first allowed address that answers.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	dial := d.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	}
	if d.Allow.Allows(addr) {
		return dial(ctx, network, addr)
	}
	resolver := d.Resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	ips, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	var lastErr error = fmt.Errorf("dialing %s: %w", host, ErrPrivateAddress)
	for _, ip := range ips {
		if !IsPublic(ip) {
			continue
		}
		conn, err := dial(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		lastErr = err
	}
	return nil, lastErr
}
