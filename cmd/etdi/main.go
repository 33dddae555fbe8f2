// Command etdi signs and verifies MCP tool definitions (ETDI).
//
// See docs/walkthrough.md for a walk-through, docs/commands for each
// command and SPEC.md for the formats and the exit codes.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/etdi-dev/etdi/guard"
)

// softMemoryLimit keeps the garbage collector from letting the heap grow to
// twice the live data on large bundles; GOMEMLIMIT overrides it.
const softMemoryLimit = 64 << 20

// checkMemoryLimit is the soft limit of the commands that hold a whole live
// listing and write approvals (check, pin approve): below their live data
// a soft limit only burns CPU collecting garbage (a 58 MiB listing took
// twice as long), and their peak stays under 256 MB with this one.
const checkMemoryLimit = 192 << 20

// raiseMemoryLimit sets checkMemoryLimit unless GOMEMLIMIT is set.
func raiseMemoryLimit() {
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(checkMemoryLimit)
	}
}

// version is etdi's version, set at build time with
// -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(softMemoryLimit)
	}
	if path := os.Getenv(checkFileEnv); path != "" {
		os.Exit(checkFileChild(path))
	}
	// What a server detaches (setsid, double fork) comes back to etdi,
	// which ends it with the server; etdi runs nothing else beside one.
	guard.AdoptOrphans()
	os.Exit(runGuarded())
}

// runGuarded runs etdi and turns a panic into an operational error (exit
// 1): the Go runtime would exit 2, which CI reads as a usage error.
func runGuarded() (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "etdi: error: internal error: %v\n%s", r, debug.Stack())
			code = exitError
		}
	}()
	return run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}
