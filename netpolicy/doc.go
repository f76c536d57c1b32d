// Package netpolicy decides which network addresses RelayBell may reach on a
// customer's behalf: push endpoints and (later) webhook receivers must be
// public hosts, except for the host:port pairs an operator allow-lists.
//
// The check that matters is the one on the address actually dialled (Dialer),
// after DNS resolution, so a name that resolves to a private address (or is
// rebound to one) is refused. CheckPushEndpoint is the early, syntactic check
// done when a subscription is registered.
//
// It never resolves names outside a dial and never keeps state beyond its
// configuration.
package netpolicy
