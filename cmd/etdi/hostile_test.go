//go:build linux

package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/mcpclient/hostile"
)

// The test binary serves as a hostile stdio server when MCP_HOSTILE is
// set, or as the measuring helper (init runs before TestMain builds etdi).
func init() {
	if out := os.Getenv(measureEnv); out != "" {
		measure(out)
	}
	if mode := os.Getenv(hostile.Env); mode != "" {
		hostile.Stdio(mode)
		os.Exit(0)
	}
}

// measureEnv makes the test binary the measuring helper: it runs the
// command in os.Args[1:] and writes its exit code, wall time and
// ru_maxrss to the named file. Run from a fresh, small helper, the peak
// RSS is etdi's: Go starts children with vfork, so a child of the big
// test process would be charged that process's pages.
const measureEnv = "ETDI_MEASURE_OUT"

func measure(out string) {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, measureEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.WriteFile(out, fmt.Appendf(nil, "%d %d %d", cmd.ProcessState.ExitCode(), wall.Nanoseconds(),
		cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss), 0o644)
	os.Exit(0)
}

// hostileCase is one hostile server and what etdi check must end with:
// its exit code and a text of its output (for a server that sends too
// much, the limit that stopped etdi: bytes of a message, messages, JSON
// values, which bound what etdi reads however loaded the machine is).
type hostileCase struct {
	name string
	mode string // stdio mode, or "" for the handler
	h    http.Handler
	code int
	want string
	// quick marks the cases TestHostileServers runs: one of each bound,
	// deadline and origin rule, so that the binary is shown to apply
	// them end to end. internal/mcpclient tests every case in process;
	// BenchmarkHostileServers runs them all through the binary.
	quick bool
}

func hostileCases(otherURL string) []hostileCase {
	return []hostileCase{
		{"stdio good", hostile.Good, nil, 13, `"get_forecast"`, true},
		{"stdio never reads, never writes, ignores SIGTERM", hostile.Deaf, nil, 1, "no answer within 3s", true},
		{"stdio stops reading, 1 MiB request pending", hostile.StopsReading, nil, 1, "context deadline exceeded", true},
		{"stdio floods requests, never reads", hostile.FloodRequest, nil, 1, "more than 1000 messages", true},
		{"stdio floods notifications", hostile.FloodNotify, nil, 1, "more than 1000 messages", false},
		{"stdio 2 GiB line", hostile.HugeLine, nil, 1, "more than 67108864 bytes", true},
		{"stdio 50 pages of 15 MiB", hostile.HugePages, nil, 1, "more than 67108864 bytes", false},
		{"stdio grandchild holds stderr", hostile.Grandchild, nil, 13, `"get_forecast"`, true},
		{"stdio 60 MiB listing, 4 pages (accepted)", hostile.BigListing, nil, 13, `"tool_3"`, false},
		{"stdio 20,000 tools, 58 MiB (accepted)", hostile.ManyBigTools, nil, 13, `"t3_4999"`, false},
		{"stdio dense array, 4M zeros in 8 MiB", hostile.DenseArray, nil, 1, "more than 50000 JSON values in the tool definition at index 0", true},
		{"stdio dense object, 4M members in 50 MiB", hostile.DenseObject, nil, 1, "more than 50000 JSON values in the tool definition at index 0", false},
		{"stdio 60 nested arrays of 100,000 zeros", hostile.DeepWide, nil, 1, "more than 50000 JSON values in the tool definition at index 0", false},
		{"stdio initialize answer of 2M zeros", hostile.DenseInit, nil, 1, "initialize: invalid JSON at byte 2000095: more than 1000000 JSON values in the document", false},
		{"stdio 6 pages of one tool of 49,995 values", hostile.DensePages, nil, 1, "page 6: invalid JSON at byte 91: more than 250000 JSON values in the listing (all pages together)", true},
		{"stdio 5 tools of 49,995 values (words), 249,977 in all (accepted)", hostile.DenseMax, nil, 13, `"dense_4"`, false},
		{"stdio 5 tools with 49,990 words in _meta, 33 MiB (accepted)", hostile.DenseMeta, nil, 13, `"dense_4"`, false},
		{"http 2 GiB JSON body", "", hostile.Handler(hostile.HugeLine), 1, "more than 67108864 bytes", false},
		{"http gzip bomb, 1 MB to 1 GiB", "", hostile.Handler(hostile.GzipBomb), 1, "more than 67108864 bytes", true},
		{"http 2 GiB SSE event", "", hostile.Handler(hostile.HugeEvent), 1, "more than 67108864 bytes", false},
		{"http 2 GiB error body", "", hostile.Handler(hostile.HugeError), 1, "HTTP status 500", true},
		{"http 50 pages of 15 MiB", "", hostile.Handler(hostile.HugePages), 1, "more than 67108864 bytes", false},
		{"http floods requests", "", hostile.Handler(hostile.FloodRequest), 1, "more than 1000 messages", false},
		{"http floods notifications", "", hostile.Handler(hostile.FloodNotify), 1, "more than 1000 messages", true},
		{"http redirect to another origin", "", hostile.Redirect(otherURL + "/mcp"), 1, "refused", true},
		{"http 60 MiB listing, 4 pages (accepted)", "", hostile.Handler(hostile.BigListing), 13, `"tool_3"`, false},
	}
}

// hostileDeadlines are the servers whose test is one of etdi's deadlines,
// and that deadline alone is short: the deaf server's start (a server
// that answers nothing can only be ended by --start-timeout), the one
// that stops reading the whole fetch (--timeout, whatever its start took
// on a loaded machine). The others get deadlines no loaded machine
// reaches, so that the limit, not the clock, ends them.
var hostileDeadlines = map[string][2]string{hostile.Deaf: {"3s", "5m"}, hostile.StopsReading: {"3m", "5s"}}

// hostileEnv is a folder with a trust policy that warns about unsigned
// tools, and a server of another origin that must receive nothing.
type hostileEnv struct {
	dir, exe string
	other    *hostile.Recorder
	otherURL string
}

func newHostileEnv(tb testing.TB) *hostileEnv {
	dir := tb.TempDir()
	os.WriteFile(filepath.Join(dir, "trust.json"), []byte(`{"version":1,"unsigned":"warn","providers":[]}`), 0o644)
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	e := &hostileEnv{dir: dir, exe: exe, other: &hostile.Recorder{Header: "X-Secret"}}
	srv := httptest.NewServer(e.other)
	tb.Cleanup(srv.Close)
	e.otherURL = srv.URL
	return e
}

// check runs etdi check against c's server through the measuring helper,
// fails tb unless it ends as c says, and returns etdi's wall time and
// peak RSS.
func (e *hostileEnv) check(tb testing.TB, c hostileCase) (time.Duration, int64) {
	start, timeout := "3m", "5m"
	if d, ok := hostileDeadlines[c.mode]; ok {
		start, timeout = d[0], d[1]
	}
	args := []string{"check", "--trust", "trust.json", "--pins", "pins.db", "--name", "hostile", "--json",
		"--start-timeout", start, "--timeout", timeout}
	env := testEnv("HOME="+e.dir, "PATH="+os.Getenv("PATH"))
	if c.mode != "" {
		args = append(args, "--server", "--", e.exe)
		env = append(env, hostile.Env+"="+c.mode)
	} else {
		srv := httptest.NewServer(c.h)
		defer srv.Close()
		args = append(args, "--url", srv.URL+"/mcp", "--header", "X-Secret: t0ken")
	}
	var so, se bytes.Buffer
	code, wall, rss := runMeasured(tb, e.dir, env, append([]string{etdiBin}, args...), &so, &se)
	if code != c.code || !strings.Contains(so.String()+se.String(), c.want) {
		tb.Fatalf("exit %d (want %d), output lacks %q:\n%.2000s\n%.2000s", code, c.code, c.want, so.String(), se.String())
	}
	return wall, rss
}

// TestHostileServers runs the etdi binary against one hostile server of
// each kind of bound: a deadline (a server that never answers, one that
// stops reading), a message's bytes (stdio, and a gzip bomb over HTTP),
// the number of messages, JSON values in a definition and in a listing,
// an error body, a redirect to another origin (which must receive
// nothing), and a grandchild that holds stderr. It asserts the exit code
// and the limit each error names; internal/mcpclient tests every hostile
// server in process, and BenchmarkHostileServers runs all of them
// through the binary and reports wall time and peak RSS.
func TestHostileServers(t *testing.T) {
	t.Parallel() // its own pin database; its servers are processes of their own
	e := newHostileEnv(t)
	for _, c := range hostileCases(e.otherURL) {
		if !c.quick {
			continue
		}
		t.Run(c.name, func(t *testing.T) { e.check(t, c) })
	}
	if got := e.other.Received(); len(got) != 0 {
		t.Errorf("the other origin of the redirect received %d request(s): %q", len(got), got)
	}
}

// BenchmarkHostileServers runs etdi check against every hostile server
// and reports its wall time and peak RSS (ru_maxrss of etdi and the stdio
// server it reaped; the servers are small, so it is etdi's), the figures
// of docs/benchmarks.md:
//
//	go test ./cmd/etdi -run '^$' -bench BenchmarkHostileServers -benchtime 1x
//
// Each run also asserts the exit code and the limit named, as
// TestHostileServers does.
func BenchmarkHostileServers(b *testing.B) {
	e := newHostileEnv(b)
	for _, c := range hostileCases(e.otherURL) {
		b.Run(strings.NewReplacer(" ", "_", ",", "").Replace(c.name), func(b *testing.B) {
			var wall time.Duration
			var rss int64
			for b.Loop() {
				w, r := e.check(b, c)
				wall += w
				rss = max(rss, r)
			}
			b.ReportMetric(wall.Seconds()/float64(b.N), "wall-s/op")
			b.ReportMetric(float64(rss>>20), "peak-RSS-MB")
		})
	}
	if got := e.other.Received(); len(got) != 0 {
		b.Errorf("the other origin of the redirect received %d request(s): %q", len(got), got)
	}
}

// runMeasured runs argv through the measuring helper and returns its exit
// code, wall time and peak RSS in bytes.
func runMeasured(t testing.TB, dir string, env, argv []string, stdout, stderr *bytes.Buffer) (int, time.Duration, int64) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "measure")
	cmd := exec.Command(os.Args[0], argv...)
	cmd.Dir = dir
	cmd.Env = append(env, measureEnv+"="+out)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("measuring helper: %v %s", err, stderr)
	}
	var code int
	var wall, kb int64
	b, _ := os.ReadFile(out)
	if _, err := fmt.Sscan(string(b), &code, &wall, &kb); err != nil {
		t.Fatalf("measuring helper wrote %q", b)
	}
	return code, time.Duration(wall), kb << 10
}

// Interrupted during a fetch, etdi ends the server's process group (which
// no longer gets the terminal's signals) before it ends itself, even a
// server that ignores SIGTERM. The test sends SIGTERM: SIGINT is ignored by
// processes a non-interactive shell starts in the background, and etdi
// rightly keeps ignoring a signal it was started ignoring.
// A Go test: it waits for the server's pid file before it signals etdi.
func TestInterruptEndsServer(t *testing.T) {
	t.Parallel() // its own folder, servers and store
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "trust.json"), []byte(`{"version":1,"unsigned":"warn","providers":[]}`), 0o644)
	exe, _ := os.Executable()
	pidFile := filepath.Join(dir, "server.pid")
	cmd := exec.Command(etdiBin, "check", "--trust", "trust.json", "--pins", "pins.db", "--name", "hostile",
		"--start-timeout", "60s", "--timeout", "60s", "--server", "--", exe)
	cmd.Dir = dir
	cmd.Env = testEnv("HOME="+dir, "PATH="+os.Getenv("PATH"), hostile.Env+"="+hostile.Deaf, hostile.PIDFile+"="+pidFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The server's start is the event waited for (its pid file), with a
	// deadline no loaded machine reaches.
	var pid int
	for deadline := time.Now().Add(2 * time.Minute); pid == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		fmt.Sscan(string(b), &pid)
	}
	if pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the server did not start")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("etdi ended with %v, want to be ended by SIGTERM", cmd.ProcessState)
	}
	if syscall.Kill(pid, 0) == nil && !isZombie(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("server %d survived etdi's interruption", pid)
	}
}

// isZombie reports whether process pid has ended but is not yet reaped.
func isZombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
