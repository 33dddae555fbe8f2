package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/mcpclient"
)

// BenchmarkLive compares, for the fixture server (2 tools) and its
// paginated mode (250 tools in 7 pages), a bare spawn + initialize +
// tools/list (in-process, the same client code) with a whole
// "etdi check --server" process against approved pins. The difference is
// what etdi adds: process start, trust policy, digests, pin comparison.
func BenchmarkLive(b *testing.B) {
	needNode(b)
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "trust.json"), []byte(`{"version":1,"unsigned":"allow","providers":[]}`), 0o644)
	for _, mode := range []string{"", "paginate"} {
		env := append(os.Environ(), "FIXTURE_MODE="+mode)
		name := "tools=2"
		if mode != "" {
			name = "tools=250"
		}
		argv := []string{"node", fixtureJS}
		b.Run(name+"/bare", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := mcpclient.Stdio(context.Background(), argv, env, "", mcpclient.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/etdi-check", func(b *testing.B) {
			args := []string{"check", "--trust", "trust.json", "--pins", "pins-" + name + ".db", "--name", "bench-" + name, "--server", "--"}
			args = append(args, argv...)
			approve := exec.Command(etdiBin, append(args[:1:1], append([]string{"--yes"}, args[1:]...)...)...)
			approve.Dir, approve.Env = dir, env
			if out, err := approve.CombinedOutput(); err != nil {
				b.Fatalf("approve: %v %s", err, out)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(etdiBin, args...)
				cmd.Dir, cmd.Env = dir, env
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v %s", err, out)
				}
			}
		})
	}
}

// BenchmarkRunCall measures a tools/call round trip of a host over stdio
// to the Node.js fixture server, directly and through etdi run (and etdi
// run --audit-calls), taking turns call by call so that every session
// meets the same load of a shared machine. It reports each median
// round trip and the CPU time per call of each process (etdi run's with
// the server's, which it waits for; the difference is etdi's own).
func BenchmarkRunCall(b *testing.B) {
	needNode(b)
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "trust.json"), []byte(`{"version":1,"unsigned":"warn","providers":[]}`), 0o644)
	approve := exec.Command(etdiBin, "check", "--trust", "trust.json", "--pins", "pins.db", "--yes", "--name", "weather", "--server", "--", "node", fixtureJS)
	approve.Dir = dir
	if out, err := approve.CombinedOutput(); err != nil {
		b.Fatalf("approve: %v %s", err, out)
	}
	run := []string{etdiBin, "run", "--trust", "trust.json", "--pins", "pins.db", "--name", "weather"}
	sessions := []struct {
		name  string
		argv  []string
		cmd   *exec.Cmd
		h     *rawHost
		times []time.Duration
	}{
		{name: "direct", argv: []string{"node", fixtureJS}},
		{name: "etdi-run", argv: append(append(slices.Clone(run), "--"), "node", fixtureJS)},
		{name: "etdi-run-audit-calls", argv: append(append(slices.Clone(run), "--audit-calls", "--"), "node", fixtureJS)},
	}
	for i := range sessions {
		s := &sessions[i]
		s.cmd = exec.Command(s.argv[0], s.argv[1:]...)
		s.cmd.Dir = dir
		s.h = startRaw(b, s.cmd)
		s.h.ask(b, 1, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
		s.h.notify("notifications/initialized")
		s.h.ask(b, 2, "tools/list", `{}`)
	}
	id := 3
	for b.Loop() {
		for i := range sessions {
			s := &sessions[i]
			start := time.Now()
			s.h.ask(b, id, "tools/call", `{"name":"get_weather","arguments":{"city":"Berlin"}}`)
			s.times = append(s.times, time.Since(start))
		}
		id++
	}
	for i := range sessions {
		s := &sessions[i]
		slices.Sort(s.times)
		b.ReportMetric(float64(s.times[len(s.times)/2].Nanoseconds())/1e3, s.name+"-median-µs")
		s.h.in.Close()
		s.cmd.Wait()
		if cpu, ok := cpuOf(s.cmd.ProcessState); ok {
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), s.name+"-cpu-µs/call")
		}
	}
}

// BenchmarkRunTenGates runs ten etdi run --audit-calls sessions on one
// pin database at once, each making b.N calls, with etdi check of the
// same database running beside them; it reports the calls per second of
// all gates together, the call latencies and the slowest check. The same
// without --audit-calls tells what the database costs.
func BenchmarkRunTenGates(b *testing.B) {
	b.Run("audit-calls", func(b *testing.B) { tenGates(b, []string{"--audit-calls"}) })
	b.Run("no-audit", func(b *testing.B) { tenGates(b, nil) })
}

func tenGates(b *testing.B, auditFlag []string) {
	needNode(b)
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "trust.json"), []byte(`{"version":1,"unsigned":"warn","providers":[]}`), 0o644)
	check := []string{"check", "--trust", "trust.json", "--pins", "pins.db", "--name", "weather", "--server", "--", "node", fixtureJS}
	approve := exec.Command(etdiBin, append([]string{check[0], "--yes"}, check[1:]...)...)
	approve.Dir = dir
	if out, err := approve.CombinedOutput(); err != nil {
		b.Fatalf("approve: %v %s", err, out)
	}
	hosts := make([]*rawHost, 10)
	for g := range hosts {
		cmd := exec.Command(etdiBin, append([]string{"run", "--trust", "trust.json", "--pins", "pins.db", "--name", "weather"}, append(auditFlag, "--", "node", fixtureJS)...)...)
		cmd.Dir = dir
		hosts[g] = startRaw(b, cmd)
		hosts[g].ask(b, 1, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
		hosts[g].notify("notifications/initialized")
		hosts[g].ask(b, 2, "tools/list", `{}`)
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	checks := 0
	var checkWorst time.Duration
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			cmd := exec.Command(etdiBin, check...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Errorf("check beside the gates: %v %s", err, out)
				return
			}
			checks++
			checkWorst = max(checkWorst, time.Since(start))
		}
	}()
	var worst time.Duration
	var all []time.Duration
	var mu sync.Mutex
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Go(func() {
			for i := range b.N {
				t0 := time.Now()
				h.ask(b, 3+i, "tools/call", `{"name":"get_weather","arguments":{"city":"Berlin"}}`)
				d := time.Since(t0)
				mu.Lock()
				worst = max(worst, d)
				all = append(all, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(stop)
	<-stopped // the directory goes with the benchmark
	b.ReportMetric(float64(10*b.N)/elapsed.Seconds(), "calls/s")
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1e3, "p50-call-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1e3, "p99-call-ms")
	b.ReportMetric(float64(worst.Microseconds())/1e3, "worst-call-ms")
	b.ReportMetric(float64(checks), "checks")
	b.ReportMetric(float64(checkWorst.Milliseconds()), "worst-check-ms")
}
