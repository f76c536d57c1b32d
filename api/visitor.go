package api

import (
	"net/netip"
	"strings"

	"github.com/phuslu/iploc"

	"github.com/relaybell/relaybell/netpolicy"
)

// visitorIP is the address of the browser behind a request: the first
// address of X-Forwarded-For when the API sits behind a trusted proxy
// (Config.TrustProxy), else the connection's peer. The proxy must replace
// or append to what the browser sent, as the usual ones do.
func (a *API) visitorIP(r *request) netip.Addr {
	if a.cfg.TrustProxy {
		first, _, _ := strings.Cut(string(r.fc.Request.Header.Peek("X-Forwarded-For")), ",")
		if ip, err := netip.ParseAddr(strings.TrimSpace(first)); err == nil {
			return ip.Unmap()
		}
	}
	ip, _ := netip.AddrFromSlice(r.fc.RemoteIP())
	return ip.Unmap()
}

// country is the visitor's 2-letter country: from the trusted proxy header
// when one is configured (the proxy knows better than an address seen
// through it), else from the visitor's IP address in the IP-to-country
// database built into the binary. Unknown is "".
func (a *API) country(r *request) string {
	if a.cfg.CountryHeader != "" {
		return countryCode(strings.TrimSpace(string(r.fc.Request.Header.Peek(a.cfg.CountryHeader))))
	}
	return countryOf(a.visitorIP(r))
}

// countryOf looks a public address up; private, loopback and reserved
// addresses have no country.
func countryOf(ip netip.Addr) string {
	if !netpolicy.IsPublic(ip) {
		return ""
	}
	return countryCode(iploc.IPCountry(ip))
}

// countryCode upper-cases a 2-letter code; "XX" and "ZZ" (unknown) and
// anything else that is not two letters is "".
func countryCode(v string) string {
	v = strings.ToUpper(v)
	if len(v) != 2 || v[0] < 'A' || v[0] > 'Z' || v[1] < 'A' || v[1] > 'Z' || v == "XX" || v == "ZZ" {
		return ""
	}
	return v
}
