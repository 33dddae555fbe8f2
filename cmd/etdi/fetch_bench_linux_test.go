package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/etdi-dev/etdi/internal/mcpclient/hostile"
)

// BenchmarkFetchLargeListing measures `etdi fetch --out` of the largest
// listing a fetch accepts, 20,000 tools of 3 KB in 4 pages of 15 MiB
// (58 MiB; the test binary serves it), as a process: wall time, and peak
// RSS from the measuring helper (measureEnv), so it is etdi's and its
// server's, not this process's.
func BenchmarkFetchLargeListing(b *testing.B) {
	dir := b.TempDir()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	var peak int64
	for i := 0; i < b.N; i++ {
		out := filepath.Join(dir, "measure")
		cmd := exec.Command(exe, etdiBin, "fetch", "--out", "live.json", "--server", "--", exe)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), hostile.Env+"="+hostile.ManyBigTools, measureEnv+"="+out)
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("measuring helper: %v %s", err, msg)
		}
		var code int
		var wall, kb int64
		m, _ := os.ReadFile(out)
		if _, err := fmt.Sscan(string(m), &code, &wall, &kb); err != nil || code != 0 {
			b.Fatalf("etdi fetch: exit %d (%q)", code, m)
		}
		peak = max(peak, kb)
	}
	b.StopTimer()
	if st, err := os.Stat(filepath.Join(dir, "live.json")); err != nil || st.Size() < 58<<20 {
		b.Fatalf("live.json: %v", err)
	}
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MB")
}
