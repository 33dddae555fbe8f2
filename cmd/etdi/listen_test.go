package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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

// etdi run --listen between the TypeScript SDK's Streamable HTTP client
// and the fixture server: the host sees the approved tools, calls one,
// is refused an unlisted one with -32602, gets list_changed on its GET
// stream when the server changes its tool after the first call, and is
// refused the changed tool, which a fresh list no longer holds.
func TestListenFixtureServer(t *testing.T) {
	p := liveEnv(t)
	server := []string{"--bundle", "w.etdi.json", "--server", "--", "node", fixtureJS}
	if r := p.liveCheck(nil, append([]string{"--yes"}, server...)...); r.code != 0 {
		t.Fatalf("check --yes: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), listenWait)
	defer cancel()
	cmd := boundedCommand(ctx, etdiBin, "run", "--trust", "trust.json", "--pins", "pins.db", "--bundle", "w.etdi.json",
		"--listen", "127.0.0.1:0", "--", "node", fixtureJS)
	cmd.Dir = p.dir
	cmd.Env = []string{"HOME=" + p.dir, "XDG_CONFIG_HOME=" + filepath.Join(p.dir, ".config"), "PATH=" + os.Getenv("PATH"),
		"FIXTURE_AFTER_CALL=description"}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log strings.Builder
	url := make(chan string, 1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		defer close(url)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if u, ok := strings.CutPrefix(sc.Text(), "etdi: listening on "); ok {
				url <- u
			}
		}
	}()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-drained:
		case <-ctx.Done(): // etdi was killed; Wait closes its pipes
		}
		return cmd.Wait()
	}
	defer stop()
	var endpoint string
	select {
	case endpoint = <-url:
	case <-ctx.Done():
	}
	if !strings.HasPrefix(endpoint, "http://127.0.0.1:") || !strings.HasSuffix(endpoint, "/mcp") {
		stop()
		t.Fatalf("no listening line:\n%s", log.String())
	}

	script := filepath.Join(p.dir, "script.json")
	p.write("script.json", `[
		{"op":"listTools"},
		{"op":"call","name":"get_weather","arguments":{"city":"Berlin"}},
		{"op":"call","name":"delete_city","arguments":{"city":"Berlin"}},
		{"op":"waitFor","method":"notifications/tools/list_changed","timeoutMs":30000},
		{"op":"call","name":"get_weather","arguments":{"city":"Berlin"}},
		{"op":"listTools"}
	]`)
	host := boundedCommand(ctx, "node", filepath.Join(mcpDir, "host-client.mjs"), "--url", endpoint, "--script", script, "--timeout-ms", "60000")
	var out, hostErr bytes.Buffer
	host.Stdout, host.Stderr = &out, &hostErr
	if err := host.Run(); err != nil {
		t.Fatalf("host: %v\n%s", err, hostErr.String())
	}
	var tr struct {
		Initialize *struct {
			ServerInfo struct{ Name string } `json:"serverInfo"`
		} `json:"initialize"`
		Steps []struct {
			Pages []struct {
				Tools []struct{ Name string } `json:"tools"`
			} `json:"pages"`
			Result *struct {
				Content []struct{ Text string } `json:"content"`
				Count   int                     `json:"count"`
			} `json:"result"`
			Error *struct {
				Code int `json:"code"`
				Data struct {
					Etdi, Kind, Tool string
				} `json:"data"`
			} `json:"error"`
		} `json:"steps"`
		Exit string `json:"exit"`
	}
	if err := json.Unmarshal(out.Bytes(), &tr); err != nil || tr.Exit != "ok" || tr.Initialize == nil || len(tr.Steps) != 6 {
		t.Fatalf("transcript: %v\n%s\n%s", err, out.String(), log.String())
	}
	names := func(step int) string {
		var n []string
		for _, pg := range tr.Steps[step].Pages {
			for _, tool := range pg.Tools {
				n = append(n, tool.Name)
			}
		}
		return strings.Join(n, ",")
	}
	blocked := func(step int, kind string) {
		t.Helper()
		e := tr.Steps[step].Error
		code := -32090
		if kind == "not_listed" {
			code = -32602 // a tool the server does not offer, as it would answer
		}
		if e == nil || e.Code != code || e.Data.Etdi != "blocked" || e.Data.Kind != kind {
			t.Fatalf("step %d: %+v, want %d %s\n%s", step, e, code, kind, out.String())
		}
	}
	if got := names(0); got != "get_weather,get_forecast" {
		t.Fatalf("tools %q\n%s", got, out.String())
	}
	if r := tr.Steps[1].Result; r == nil || len(r.Content) != 1 || r.Content[0].Text != "sunny in Berlin" {
		t.Fatalf("call: %s", out.String())
	}
	blocked(2, "not_listed")
	if r := tr.Steps[3].Result; r == nil || r.Count < 1 {
		t.Fatalf("no list_changed on the GET stream: %s\n%s", out.String(), log.String())
	}
	blocked(4, "definition_changed") // the signed definition, before the pin
	if got := names(5); got != "get_forecast" {
		t.Fatalf("tools after the change %q\n%s", got, out.String())
	}

	// The host left without DELETE: etdi runs until it is stopped, then
	// ends the server and exits 0.
	if err := stop(); err != nil {
		t.Fatalf("etdi run: %v\n%s", err, log.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(log.String(), "get_weather") {
		t.Fatalf("the blocked call is not in etdi's log:\n%s", log.String())
	}
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
	l.cmd.Env = []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, ".config"), "PATH=" + os.Getenv("PATH")}
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

// A host that never opens the GET stream (go-sdk's DisableStandaloneSSE)
// gets the progress of its call to server-everything through etdi run
// --listen, on the call's own event stream, and its answer.
func TestListenEverythingProgress(t *testing.T) {
	needNode(t)
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	server := []string{"--name", "everything", "--", "node", filepath.Join(nodeBinDir, "mcp-server-everything"), "stdio"}
	if r := runEtdi(t, p.dir, nil, append([]string{"check", "--trust", "trust.json", "--pins", "pins.db", "--start-timeout", "30s", "--yes", "--name", "everything", "--server"}, server[2:]...)...); r.code != 0 {
		t.Fatalf("check --yes: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	l := startListen(t, p.dir, server...)
	progress := make(chan float64, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params.Progress },
	})
	cs, err := client.Connect(l.ctx, &mcp.StreamableClientTransport{Endpoint: l.endpoint, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, l.logText())
	}
	defer cs.Close()
	if _, err := cs.ListTools(l.ctx, nil); err != nil {
		t.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.2, "steps": 2}}
	params.SetProgressToken("op-1")
	res, err := cs.CallTool(l.ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v\n%s", err, res, l.logText())
	}
	for i := range 2 {
		select {
		case <-progress:
		case <-l.ctx.Done():
			t.Fatalf("%d progress notifications, want 2\n%s", i, l.logText())
		}
	}
}
