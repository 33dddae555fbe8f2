//go:build linux

package realclients

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// stdioHost is a host speaking newline-delimited JSON-RPC with a server
// process over its standard input and output.
type stdioHost struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

func startHost(b *testing.B, dir string, argv ...string) *stdioHost {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, clientEnv(dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return &stdioHost{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
}

// ask sends a request and returns its answer, skipping notifications and
// requests of the server.
func (h *stdioHost) ask(b *testing.B, method, params string) json.RawMessage {
	b.Helper()
	h.id++
	fmt.Fprintf(h.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", h.id, method, params)
	for {
		line, err := h.out.ReadBytes('\n')
		if err != nil {
			b.Fatalf("%s: %v", method, err)
		}
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil || *m.ID != h.id || m.Method != "" {
			continue
		}
		if m.Error != nil {
			b.Fatalf("%s: %s", method, m.Error)
		}
		return m.Result
	}
}

func (h *stdioHost) stop() {
	h.in.Close()
	done := make(chan struct{})
	go func() { h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// BenchmarkEverythingCall measures a host's tools/call round trip to
// server-everything (echo) over stdio: directly, through a bare relay (a
// process copying each direction, as any stdio wrapper must), and through
// etdi run, taking turns call by call so that each meets the same load of
// a shared machine. It reports the median round trip of each, and the
// median time from starting the session's process to the answer of
// initialize and the first tools/list (session start).
func BenchmarkEverythingCall(b *testing.B) {
	needClients(b)
	dir := b.TempDir()
	if _, se, code := run(b, dir, clientEnv(dir), etdiBin, "trust", "unsigned", "--trust", "trust.json", "warn"); code != 0 {
		b.Fatal(se)
	}
	if so, se, code := run(b, dir, clientEnv(dir), etdiBin, "check", "--trust", "trust.json", "--pins", "pins.db", "--name", "everything",
		"--yes", "--server", "--", everything); code != 0 {
		b.Fatalf("check --yes: %d %s%s", code, so, se)
	}
	sessions := []struct {
		name   string
		argv   []string
		h      *stdioHost
		starts []time.Duration
		calls  []time.Duration
	}{
		{name: "direct", argv: []string{everything}},
		{name: "relay", argv: []string{"sh", "-c", `cat | "$0" | cat`, everything}},
		{name: "etdi-run", argv: []string{etdiBin, "run", "--trust", "trust.json", "--pins", "pins.db", "--name", "everything", "--", everything}},
	}
	const init = `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`
	open := func(i int) {
		s := &sessions[i]
		t0 := time.Now()
		s.h = startHost(b, dir, s.argv...)
		s.h.ask(b, "initialize", init)
		fmt.Fprintln(s.h.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		s.h.ask(b, "tools/list", `{}`)
		s.starts = append(s.starts, time.Since(t0))
	}
	// Session start, five times each, in turns.
	for range 5 {
		for i := range sessions {
			open(i)
			sessions[i].h.stop()
		}
	}
	for i := range sessions {
		open(i)
	}
	for b.Loop() {
		for i := range sessions {
			s := &sessions[i]
			t0 := time.Now()
			s.h.ask(b, "tools/call", `{"name":"echo","arguments":{"message":"hello"}}`)
			s.calls = append(s.calls, time.Since(t0))
		}
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds())
	}
	for i := range sessions {
		s := &sessions[i]
		s.h.stop()
		b.ReportMetric(median(s.calls), s.name+"-call-µs")
		b.ReportMetric(median(s.starts)/1e3, s.name+"-start-ms")
	}
}
