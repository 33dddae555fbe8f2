//go:build !unix

package main

import (
	"fmt"
	"os"
)

// rssHelper has no ru_maxrss to report on this platform.
func rssHelper() {
	fmt.Fprintln(os.Stderr, "peak RSS is measured on unix only")
	os.Exit(1)
}
