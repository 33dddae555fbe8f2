// Command etdi signs and verifies MCP tool definitions (ETDI).
//
// See README.md for a walk-through and SPEC.md for the formats and the
// exit codes.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
