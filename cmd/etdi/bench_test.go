package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/testgen"
)

// processFixture writes a signed n-tool bundle, its tools/list and a
// policy into a temporary directory.
func processFixture(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	bundle, p, err := testgen.Signed(n)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Save(filepath.Join(dir, "trust.json")); err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "bundle.json"), bundle, 0o644)
	os.WriteFile(filepath.Join(dir, "tools.json"), testgen.ToolsList(n), 0o644)
	return dir
}

// BenchmarkProcessVerify measures `etdi verify` as a whole process (start,
// read, verify, print, exit) and reports the child's peak resident memory.
func BenchmarkProcessVerify(b *testing.B) {
	for _, tc := range []struct {
		n    int
		live bool
	}{{100, false}, {100, true}, {10000, false}, {10000, true}} {
		b.Run(fmt.Sprintf("tools=%d/live=%v", tc.n, tc.live), func(b *testing.B) {
			dir := processFixture(b, tc.n)
			args := []string{"verify", "--trust", "trust.json"}
			if tc.live {
				args = append(args, "--tools", "tools.json")
			}
			args = append(args, "bundle.json")
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(etdiBin, args...)
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
			}
			b.StopTimer()
			b.ReportMetric(peakRSS(b, dir, args), "peak-RSS-MB")
		})
	}
}

// peakRSS runs etdi once from a fresh helper process (this test binary
// re-executed) and returns etdi's peak resident memory in MB. Spawning it
// from the benchmark process itself would count that process's memory:
// Go starts children with vfork, and ru_maxrss includes the shared pages.
func peakRSS(b *testing.B, dir string, args []string) float64 {
	cmd := exec.Command(os.Args[0], append([]string{etdiBin}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ETDI_RSS_HELPER=1")
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("rss helper: %v", err)
	}
	kb, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		b.Fatalf("rss helper output %q", out)
	}
	return float64(kb) / 1024
}
