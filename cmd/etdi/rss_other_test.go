//go:build !unix

package main

import (
	"fmt"
	"os"
	"time"
)

// rssHelper has no ru_maxrss to report on this platform.
func rssHelper() {
	fmt.Fprintln(os.Stderr, "peak RSS is measured on unix only")
	os.Exit(1)
}

// cpuOf is not measured on this platform.
func cpuOf(ps *os.ProcessState) (time.Duration, bool) { return 0, false }
