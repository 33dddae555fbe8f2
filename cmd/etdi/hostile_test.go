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

// TestHostileServers runs the etdi binary against each hostile server and
// reports its wall time and peak RSS (ru_maxrss of etdi and the stdio
// server it reaped; the servers are small, so it is etdi's). It asserts
// the exit code and the error: for every server that sends too much, the
// limit that stopped etdi (bytes of a message, messages, JSON values),
// which bounds what etdi reads and keeps however loaded the machine is.
// Wall times and peak RSS are reported, not asserted: both grow on a
// loaded machine (the garbage collector and the scavenger that returns
// freed memory run later), and the README's table comes from this output
// (go test ./cmd/etdi -run TestHostileServers -v).
//
// Only the servers that never answer or stop reading are given the short
// deadline each tests (--start-timeout 3s, --timeout 5s); the others get
// deadlines no loaded machine reaches, so that the limit, not the clock,
// ends them. A Go test: it measures etdi's peak RSS from a helper process.
func TestHostileServers(t *testing.T) {
	t.Parallel() // its own pin database; its servers are processes of their own
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "trust.json"), []byte(`{"version":1,"unsigned":"warn","providers":[]}`), 0o644)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	other := &hostile.Recorder{Header: "X-Secret"}
	otherSrv := httptest.NewServer(other)
	defer otherSrv.Close()
	type tc struct {
		name string
		mode string // stdio mode, or "" for the handler
		h    http.Handler
		code int
		want string
	}
	// deadlines are the servers whose test is one of etdi's deadlines, and
	// that deadline alone is short: the deaf server's start (a server that
	// answers nothing can only be ended by --start-timeout), the one that
	// stops reading the whole fetch (--timeout, whatever its start took
	// on a loaded machine).
	deadlines := map[string][2]string{hostile.Deaf: {"3s", "5m"}, hostile.StopsReading: {"3m", "5s"}}
	cases := []tc{
		{"stdio good", hostile.Good, nil, 13, `"get_forecast"`},
		{"stdio never reads, never writes, ignores SIGTERM", hostile.Deaf, nil, 1, "no answer within 3s"},
		{"stdio stops reading, 1 MiB request pending", hostile.StopsReading, nil, 1, "context deadline exceeded"},
		{"stdio floods requests, never reads", hostile.FloodRequest, nil, 1, "more than 1000 messages"},
		{"stdio floods notifications", hostile.FloodNotify, nil, 1, "more than 1000 messages"},
		{"stdio 2 GiB line", hostile.HugeLine, nil, 1, "more than 67108864 bytes"},
		{"stdio 50 pages of 15 MiB", hostile.HugePages, nil, 1, "more than 67108864 bytes"},
		{"stdio grandchild holds stderr", hostile.Grandchild, nil, 13, `"get_forecast"`},
		{"stdio 60 MiB listing, 4 pages (accepted)", hostile.BigListing, nil, 13, `"tool_3"`},
		{"stdio 20,000 tools, 58 MiB (accepted)", hostile.ManyBigTools, nil, 13, `"t3_4999"`},
		{"stdio dense array, 4M zeros in 8 MiB", hostile.DenseArray, nil, 1, "more than 50000 JSON values in the tool definition at index 0"},
		{"stdio dense object, 4M members in 50 MiB", hostile.DenseObject, nil, 1, "more than 50000 JSON values in the tool definition at index 0"},
		{"stdio 60 nested arrays of 100,000 zeros", hostile.DeepWide, nil, 1, "more than 50000 JSON values in the tool definition at index 0"},
		{"stdio initialize answer of 2M zeros", hostile.DenseInit, nil, 1, "initialize: invalid JSON at byte 2000095: more than 1000000 JSON values in the document"},
		{"stdio 6 pages of one tool of 49,995 values", hostile.DensePages, nil, 1, "page 6: invalid JSON at byte 91: more than 250000 JSON values in the listing (all pages together)"},
		{"stdio 5 tools of 49,995 values (words), 249,977 in all (accepted)", hostile.DenseMax, nil, 13, `"dense_4"`},
		{"stdio 5 tools with 49,990 words in _meta, 33 MiB (accepted)", hostile.DenseMeta, nil, 13, `"dense_4"`},
		{"http 2 GiB JSON body", "", hostile.Handler(hostile.HugeLine), 1, "more than 67108864 bytes"},
		{"http gzip bomb, 1 MB to 1 GiB", "", hostile.Handler(hostile.GzipBomb), 1, "more than 67108864 bytes"},
		{"http 2 GiB SSE event", "", hostile.Handler(hostile.HugeEvent), 1, "more than 67108864 bytes"},
		{"http 2 GiB error body", "", hostile.Handler(hostile.HugeError), 1, "HTTP status 500"},
		{"http 50 pages of 15 MiB", "", hostile.Handler(hostile.HugePages), 1, "more than 67108864 bytes"},
		{"http floods requests", "", hostile.Handler(hostile.FloodRequest), 1, "more than 1000 messages"},
		{"http floods notifications", "", hostile.Handler(hostile.FloodNotify), 1, "more than 1000 messages"},
		{"http redirect to another origin", "", hostile.Redirect(otherSrv.URL + "/mcp"), 1, "refused"},
		{"http 60 MiB listing, 4 pages (accepted)", "", hostile.Handler(hostile.BigListing), 13, `"tool_3"`},
	}
	var report strings.Builder
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start, timeout := "3m", "5m"
			if d, ok := deadlines[c.mode]; ok {
				start, timeout = d[0], d[1]
			}
			args := []string{"check", "--trust", "trust.json", "--pins", "pins.db", "--name", "hostile", "--json",
				"--start-timeout", start, "--timeout", timeout}
			env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
			if c.mode != "" {
				args = append(args, "--server", "--", exe)
				env = append(env, hostile.Env+"="+c.mode)
			} else {
				srv := httptest.NewServer(c.h)
				defer srv.Close()
				args = append(args, "--url", srv.URL+"/mcp", "--header", "X-Secret: t0ken")
			}
			var so, se bytes.Buffer
			code, wall, rss := runMeasured(t, dir, env, append([]string{etdiBin}, args...), &so, &se)
			fmt.Fprintf(&report, "| %s | exit %d | %.2f s | %d MB |\n", c.name, code, wall.Seconds(), rss>>20)
			if code != c.code || !strings.Contains(so.String()+se.String(), c.want) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%.2000s\n%.2000s", code, c.code, c.want, so.String(), se.String())
			}
		})
	}
	if got := other.Received(); len(got) != 0 {
		t.Errorf("the other origin of the redirect received %d request(s): %q", len(got), got)
	}
	t.Logf("etdi check against hostile servers:\n| server | result | wall time | peak RSS |\n|---|---|---|---|\n%s", report.String())
}

// runMeasured runs argv through the measuring helper and returns its exit
// code, wall time and peak RSS in bytes.
func runMeasured(t *testing.T, dir string, env, argv []string, stdout, stderr *bytes.Buffer) (int, time.Duration, int64) {
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
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "trust.json"), []byte(`{"version":1,"unsigned":"warn","providers":[]}`), 0o644)
	exe, _ := os.Executable()
	pidFile := filepath.Join(dir, "server.pid")
	cmd := exec.Command(etdiBin, "check", "--trust", "trust.json", "--pins", "pins.db", "--name", "hostile",
		"--start-timeout", "60s", "--timeout", "60s", "--server", "--", exe)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), hostile.Env + "=" + hostile.Deaf, hostile.PIDFile + "=" + pidFile}
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
