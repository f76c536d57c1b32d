// Package server is RelayBell's composition root. Each role (api, fanout,
// pusher) and each backing piece (store, analytics, bus, ring) is a module
// with a name, one constructor and a list of the modules it needs; the
// target modules chosen with --roles are built in dependency order, run
// together, and torn down in reverse. "all" runs every role in one process,
// which is the embedded default.
//
// Roles never reach into each other's configuration: everything a role
// needs is passed to its constructor here.
package server
