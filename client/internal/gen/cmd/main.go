// Command cmd writes client/api_gen.go: go run ./internal/gen/cmd
// <openapi.json> <api_gen.go> (go generate in client runs it).
package main

import (
	"fmt"
	"os"

	"github.com/relaybell/relaybell/client/internal/gen"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: cmd <openapi.json> <api_gen.go>")
		os.Exit(2)
	}
	spec, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	src, err := gen.Generate(spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[2], src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
