// Package server is RelayBell's composition root. Each role (api, fanout,
// pusher) and each backing piece (store, analytics, bus, ring) is a module
// with a name, one constructor and a list of the modules it needs; the
// target modules chosen with --roles are built in dependency order, run
// together, and torn down in reverse. "all" runs every role in one process,
// which is the embedded default.
//
// Background loops are modules too: the outbox sweep, the conversion folder
// (events), the rate counts' sync (limits), the periodic purges (purge: each
// package that owns data says with its Purge what to forget), the API's
// auth version poller, fan-out, the webhook engine, the automations
// engine and the feeds' poller (on the fan-out nodes). Each is started here
// with its dependencies and stopped when Run's context ends; no other
// package starts a loop of its own (api's TestAPIStartsNoBackgroundWork
// checks the API; TestLayers checks that no package imports one above it).
//
// Roles never reach into each other's configuration: everything a role
// needs is passed to its constructor here.
package server
