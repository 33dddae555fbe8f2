package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkGateCost measures what an idle gate costs to keep: start-ms is
// the median wall time of a whole "etdi version" process (start, package
// initialisation, exit), and rss-KiB the resident memory of an "etdi run"
// of the Node.js fixture server once the host has initialized, listed
// and called a tool, and the gate has settled (rss-anon-KiB of it is the
// process's own memory, rss-file-KiB the pages of the program file,
// shared with every other etdi). Each iteration starts one of each.
func BenchmarkGateCost(b *testing.B) {
	needNode(b)
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "trust.json"), []byte(`{"version":1,"unsigned":"warn","providers":[]}`), 0o644)
	approve := exec.Command(etdiBin, "check", "--trust", "trust.json", "--pins", "pins.db", "--yes", "--name", "weather", "--server", "--", "node", fixtureJS)
	approve.Dir = dir
	if out, err := approve.CombinedOutput(); err != nil {
		b.Fatalf("approve: %v %s", err, out)
	}
	var starts []time.Duration
	var rss, anon, file []int
	for b.Loop() {
		t0 := time.Now()
		if out, err := exec.Command(etdiBin, "version").CombinedOutput(); err != nil {
			b.Fatalf("version: %v %s", err, out)
		}
		starts = append(starts, time.Since(t0))

		cmd := exec.Command(etdiBin, "run", "--trust", "trust.json", "--pins", "pins.db", "--name", "weather", "--", "node", fixtureJS)
		cmd.Dir = dir
		h := startRaw(b, cmd)
		h.ask(b, 1, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
		h.notify("notifications/initialized")
		h.ask(b, 2, "tools/list", `{}`)
		h.ask(b, 3, "tools/call", `{"name":"get_weather","arguments":{"city":"Berlin"}}`)
		time.Sleep(2 * time.Second) // idle
		h.ask(b, 4, "tools/call", `{"name":"get_weather","arguments":{"city":"Berlin"}}`)
		st := procStatus(b, cmd.Process.Pid)
		rss, anon, file = append(rss, st["VmRSS"]), append(anon, st["RssAnon"]), append(file, st["RssFile"])
		h.in.Close()
		cmd.Wait()
	}
	b.ReportMetric(float64(median(starts).Microseconds())/1e3, "start-ms")
	b.ReportMetric(float64(median(rss)), "rss-KiB")
	b.ReportMetric(float64(median(anon)), "rss-anon-KiB")
	b.ReportMetric(float64(median(file)), "rss-file-KiB")
}

// procStatus returns the kB fields of /proc/PID/status.
func procStatus(b *testing.B, pid int) map[string]int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int{}
	for line := range strings.SplitSeq(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if v, unit := strings.CutSuffix(strings.TrimSpace(v), " kB"); ok && unit {
			out[k], _ = strconv.Atoi(v)
		}
	}
	return out
}

func median[T int | time.Duration](xs []T) T {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}
