package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestOwnInitCheap keeps etdi's own packages from doing work when the
// program starts: every gate a host runs pays for it, and a command
// such as `etdi version` runs nothing else. A table or pattern is built
// on first use (sync.OnceValue), never in a package variable. Counted
// in allocations, which a loaded machine does not change, as
// GODEBUG=inittrace=1 reports them; a regular expression with a counted
// repetition ({0,255}) compiled at start costs thousands.
func TestOwnInitCheap(t *testing.T) {
	const maxAllocs = 300
	cmd := exec.Command(etdiBin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("etdi version: %v\n%s", err, stderr.Bytes())
	}
	seen := 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init PKG @T ms, D ms clock, B bytes, A allocs
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[10] != "allocs" {
			continue
		}
		if !strings.HasPrefix(f[1], "github.com/etdi-dev/etdi") {
			continue
		}
		seen++
		allocs, err := strconv.Atoi(f[9])
		if err != nil {
			t.Fatalf("unexpected line %q", sc.Text())
		}
		if allocs > maxAllocs {
			t.Errorf("%s allocates %d times when the program starts (at most %d): build its tables on first use", f[1], allocs, maxAllocs)
		}
	}
	if seen < 5 {
		t.Fatalf("inittrace named %d of etdi's packages:\n%s", seen, stderr.Bytes())
	}
}
