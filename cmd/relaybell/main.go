// Command relaybell runs the RelayBell web push service (relaybell serve)
// and its operator tools (relaybell admin ...).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/relaybell/relaybell/server"
)

func main() {
	// Before anything allocates much: the collector's target and, in a
	// container with a memory limit, a soft limit under it.
	server.GCDefaults(os.Getenv, os.ReadFile).Apply()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := server.Main(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "relaybell:", err)
		os.Exit(1)
	}
}
