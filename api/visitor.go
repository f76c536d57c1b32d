package api

import (
	"net/netip"
	"strings"

	"github.com/phuslu/iploc"

	"github.com/relaybell/relaybell/netpolicy"
)

// visitorIP is the address of the browser behind a request: the last
// public address of X-Forwarded-For, the one a trusted proxy added, when
// the API sits behind one (Config.TrustProxy), else the connection's peer.
// What the browser sent before it is the browser's to make up.
func (a *API) visitorIP(r *request) netip.Addr {
	if a.cfg.TrustProxy {
		// Each proxy appends the address it saw to what the client sent:
		// the last public address is the one a proxy of ours saw (the
		// ones after it are our private hops); those before it are the
		// client's to make up. Without a public one, the last address.
		var last netip.Addr
		for part := range strings.SplitSeq(string(r.fc.Request.Header.Peek("X-Forwarded-For")), ",") {
			ip, err := netip.ParseAddr(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			ip = ip.Unmap()
			if netpolicy.IsPublic(ip) || !netpolicy.IsPublic(last) {
				last = ip
			}
		}
		if last.IsValid() {
			return last
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
