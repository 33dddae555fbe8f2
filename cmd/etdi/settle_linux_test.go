package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// rssFileKiB returns the resident pages of files mapped by this process
// (RssFile of /proc/self/status), in KiB.
func rssFileKiB(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(line)
			}
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

// TestTrimProgram: the pages of the program file are dropped, and the
// program goes on running from it (this test's own code and data are
// read again after the trim).
func TestTrimProgram(t *testing.T) {
	before := rssFileKiB(t)
	trimProgram()
	after := rssFileKiB(t)
	if after >= before {
		t.Errorf("RssFile %d KiB before trimProgram, %d KiB after", before, after)
	}
	if got := strings.Repeat("ab", 3); got != "ababab" {
		t.Fatal(got)
	}
	t.Logf("RssFile %d KiB -> %d KiB", before, after)
}
