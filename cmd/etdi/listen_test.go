package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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

// --listen takes loopback addresses only (exit 2, before the server is
// started).
func TestListenNotLoopback(t *testing.T) {
	dir := t.TempDir()
	if r := runEtdi(t, dir, nil, "trust", "unsigned", "--policy", "trust.json", "warn"); r.code != 0 {
		t.Fatalf("trust unsigned: %d %s", r.code, r.stderr)
	}
	for _, addr := range []string{"0.0.0.0:8080", "192.0.2.1:0", "127.0.0.1", "localhost:http"} {
		// An address that is taken would serve, and wait for a host: the
		// run is bounded, and fails rather than hangs.
		ctx, cancel := context.WithTimeout(context.Background(), listenWait)
		cmd := boundedCommand(ctx, etdiBin, "run", "--trust", "trust.json", "--pins", "pins.db", "--listen", addr, "--name", "x", "--", "false")
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, ".config"), "PATH=" + os.Getenv("PATH")}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		if cmd.ProcessState == nil {
			t.Fatalf("%s: %v", addr, err)
		}
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(stderr.String(), "loopback only") {
			t.Fatalf("%s: exit %d (%v)\n%s", addr, code, ctx.Err(), stderr.String())
		}
	}
}
