package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listenWait bounds every wait of the --listen tests (etdi run, the host,
// the listening line): a regression that leaves one waiting fails the
// test instead of hanging the run. It bounds; it measures nothing.
const listenWait = 2 * time.Minute

// boundedCommand is exec.Command under ctx: killed when ctx ends, its
// output pipes closed soon after even if a child holds them.
func boundedCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// listening is an etdi run --listen started by startListen.
type listening struct {
	cmd      *exec.Cmd
	endpoint string
	mu       sync.Mutex
	log      strings.Builder
	drained  chan struct{}
	ctx      context.Context
}

// startListen starts etdi run --listen 127.0.0.1:0 with args (flags, then
// the server) in dir and waits for its listening line.
func startListen(t *testing.T, dir string, args ...string) *listening {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), listenWait)
	t.Cleanup(cancel)
	l := &listening{drained: make(chan struct{}), ctx: ctx}
	l.cmd = boundedCommand(ctx, etdiBin, append([]string{"run", "--trust", "trust.json", "--pins", "pins.db", "--listen", "127.0.0.1:0"}, args...)...)
	l.cmd.Dir = dir
	l.cmd.Env = testEnv("HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"), "PATH="+os.Getenv("PATH"))
	stderr, err := l.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	url := make(chan string, 1)
	go func() {
		defer close(l.drained)
		defer close(url)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			l.mu.Lock()
			l.log.WriteString(sc.Text() + "\n")
			l.mu.Unlock()
			if u, ok := strings.CutPrefix(sc.Text(), "etdi: listening on "); ok {
				url <- u
			}
		}
	}()
	t.Cleanup(func() { l.stop() })
	select {
	case l.endpoint = <-url:
	case <-ctx.Done():
	}
	if !strings.HasPrefix(l.endpoint, "http://127.0.0.1:") {
		l.stop()
		t.Fatalf("no listening line:\n%s", l.logText())
	}
	return l
}

func (l *listening) logText() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.log.String()
}

// stop sends SIGTERM and waits for etdi's exit.
func (l *listening) stop() error {
	if l.cmd.ProcessState != nil {
		return nil
	}
	l.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-l.drained:
	case <-l.ctx.Done():
	}
	return l.cmd.Wait()
}

// children are the ids of the processes etdi started that still run.
func (l *listening) children(t *testing.T) []int {
	t.Helper()
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", l.cmd.Process.Pid))
	var pids []int
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// eventually waits, within listenWait, until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(listenWait); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, listenWait)
		}
	}
}

// etdi run --listen serves two hosts at once, each with its own server
// process; a third beyond --max-sessions gets 503 while both are busy,
// and ends an idle one once there is one; DELETE ends one
// session and its process only; a session idle for --idle-timeout ends
// and its process is reaped, and its id then gets 404; SIGTERM ends the
// rest and exits 0.
//
// It stays Go: it holds several sessions open at once, reads the
// processes etdi started from /proc while they run, and waits for an
// idle session to expire, none of which a script's one-at-a-time
// session can express.
func TestListenSessions(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("reads the processes etdi started from /proc")
	}
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	bin := buildWeather(t, p.dir, "weather", "")
	if r := runEtdi(t, p.dir, nil, "check", "--trust", "trust.json", "--pins", "pins.db", "--name", "weather", "--yes", "--server", "--", bin); r.code != 0 {
		t.Fatalf("check --yes: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	connect := func(l *listening) *mcp.ClientSession {
		t.Helper()
		client := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1.0.0"}, nil)
		cs, err := client.Connect(l.ctx, &mcp.StreamableClientTransport{Endpoint: l.endpoint, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, l.logText())
		}
		t.Cleanup(func() { cs.Close() })
		lt, err := cs.ListTools(l.ctx, nil)
		if err != nil || len(lt.Tools) != 1 || lt.Tools[0].Name != "get_weather" {
			t.Fatalf("list: %v %+v\n%s", err, lt, l.logText())
		}
		return cs
	}

	l := startListen(t, p.dir, "--max-sessions", "2", "--name", "weather", "--", bin)
	first := connect(l)
	firstPID := l.children(t)
	second := connect(l)
	pids := l.children(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server processes at first %v, now %v; etdi's log:\n%s", pids, l.children(t), l.logText())
		}
	})
	if len(pids) != 2 || pids[0] == pids[1] || len(firstPID) != 1 {
		t.Fatalf("server processes %v\n%s", pids, l.logText())
	}
	initialize := func() (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(l.ctx, http.MethodPost, l.endpoint, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"third","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, body
	}
	// Both sessions busy (a GET stream open): none makes room.
	var streams []*http.Response
	for _, cs := range []*mcp.ClientSession{first, second} {
		get, _ := http.NewRequestWithContext(l.ctx, http.MethodGet, l.endpoint, nil)
		get.Header.Set("Accept", "text/event-stream")
		get.Header.Set("Mcp-Session-Id", cs.ID())
		resp, err := http.DefaultClient.Do(get)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET stream: %v %v", err, resp)
		}
		streams = append(streams, resp)
	}
	if resp, body := initialize(); resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(body, []byte("2 sessions are open")) {
		t.Fatalf("a third session while both are busy: %d %s", resp.StatusCode, body)
	}
	// The first idle again, the second still busy: the first makes room
	// for the third once etdi has seen its stream end, and ends with its
	// server.
	streams[0].Body.Close()
	eventually(t, "the first session idle", func() bool {
		resp, body := initialize()
		if resp.StatusCode == http.StatusOK && resp.Header.Get("Mcp-Session-Id") != "" {
			return true
		}
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("a third session: %d %s", resp.StatusCode, body)
		}
		return false
	})
	eventually(t, "the first session's server reaped", func() bool {
		return !slices.Contains(l.children(t), firstPID[0]) && len(l.children(t)) == 2
	})
	if _, err := first.ListTools(l.ctx, nil); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Fatalf("a request of the session that made room: %v", err)
	}
	if _, err := second.ListTools(l.ctx, nil); err != nil {
		t.Fatalf("the session used more recently: %v", err)
	}
	streams[1].Body.Close()
	if err := second.Close(); err != nil { // DELETE
		t.Fatal(err)
	}
	eventually(t, "one server left after DELETE", func() bool { return len(l.children(t)) == 1 })
	pids = append(pids, l.children(t)...)
	if err := l.stop(); err != nil {
		t.Fatalf("etdi run: %v\n%s", err, l.logText())
	}
	for _, pid := range pids {
		eventually(t, "the servers ended with etdi", func() bool {
			proc, err := os.FindProcess(pid)
			return err != nil || proc.Signal(syscall.Signal(0)) != nil
		})
	}

	idle := startListen(t, p.dir, "--idle-timeout", "500ms", "--name", "weather", "--", bin)
	cs := connect(idle)
	eventually(t, "the idle session's server reaped", func() bool { return len(idle.children(t)) == 0 })
	if _, err := cs.ListTools(idle.ctx, nil); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Fatalf("a request of the expired session: %v", err)
	}
	connect(idle) // a new session
	if err := idle.stop(); err != nil {
		t.Fatalf("etdi run: %v\n%s", err, idle.logText())
	}
	if log := idle.logText(); !strings.Contains(log, "session 1 ended: it expired (no request for 500ms)") {
		t.Fatalf("log:\n%s", log)
	}
}
