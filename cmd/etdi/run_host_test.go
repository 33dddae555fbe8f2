package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/pin"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkHost connects a go-sdk client to cmd (a command over stdio); it
// counts the tools/list_changed notifications it receives.
func sdkHost(t *testing.T, cmd *exec.Cmd) (*mcp.ClientSession, chan struct{}) {
	t.Helper()
	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "go-host", Version: "1.0.0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, changed
}

// gatedCmd is etdi run of cmd in p's directory with env added.
func (p *pinEnv) gatedCmd(env []string, flags []string, cmd ...string) *exec.Cmd {
	args := p.gated(flags, cmd...)
	c := exec.Command(args[0], args[1:]...)
	c.Dir = p.dir
	c.Env = append(append(os.Environ(), "HOME="+p.dir, "XDG_CONFIG_HOME="+filepath.Join(p.dir, ".config")), env...)
	return c
}

func blockedKindOf(t *testing.T, err error) string {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != -32090 && we.Code != -32602 && we.Code != -32002 {
		return ""
	}
	var d struct{ Etdi, Kind string }
	if json.Unmarshal(we.Data, &d) != nil || d.Etdi != "blocked" {
		if we.Code != -32090 {
			return "" // the server's own error
		}
		t.Fatalf("error data %s", we.Data)
	}
	if we.Code != -32090 && d.Kind != "not_listed" {
		t.Fatalf("error %d of kind %s", we.Code, d.Kind)
	}
	return d.Kind
}

// A go-sdk host drives etdi run: it lists and calls the approved tools;
// after the server changes a tool and says so, the call is refused with
// the documented error and the new list lacks it.
//
// It stays Go: its host is the go-sdk client itself (its handshake, its
// list_changed handler and its error type), which a script's JSON-RPC
// session is not.
func TestRunGoSDKHost(t *testing.T) {
	p := runEnv(t)
	cs, changed := sdkHost(t, p.gatedCmd([]string{"FIXTURE_AFTER_CALL=description"}, []string{"--bundle", "w.etdi.json"}, fixtureCmd("sdk")...))
	ctx := context.Background()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil || len(lt.Tools) != 2 {
		t.Fatalf("list: %v %+v", err, lt)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_weather", Arguments: map[string]any{"city": "Oslo"}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "sunny in Oslo" {
		t.Fatalf("call: %v %+v", err, res)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed")
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_weather", Arguments: map[string]any{"city": "Oslo"}})
	if k := blockedKindOf(t, err); k != "definition_changed" {
		t.Fatalf("call after the change: %v", err)
	}
	if lt, err = cs.ListTools(ctx, nil); err != nil || len(lt.Tools) != 1 || lt.Tools[0].Name != "get_forecast" {
		t.Fatalf("list after the change: %v %+v", err, lt)
	}
}

// A go-sdk host sees the tools of a real npm server through the gate as
// without it, but for the one the server offers only to hosts that
// declare the roots capability (etdi check declares none, so it was never
// approved): that one is withheld, and the listing the gate saved reviews
// and approves it.
//
// It stays Go for the same reason as [TestRunGoSDKHost]: the host is the
// go-sdk client.
func TestRunGoSDKHostRealServer(t *testing.T) {
	t.Parallel() // its own folder, servers and store
	p := liveEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	server := []string{"node", filepath.Join(nodeBinDir, "mcp-server-everything"), "stdio"}
	if r := p.liveCheck(nil, append([]string{"--yes", "--name", "everything", "--server", "--"}, server...)...); r.code != 0 {
		t.Fatalf("approve: %d %s", r.code, r.stderr)
	}
	list := func(cs *mcp.ClientSession, without string) string {
		lt, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var keep []*mcp.Tool
		for _, tool := range lt.Tools {
			if tool.Name != without {
				keep = append(keep, tool)
			}
		}
		b, _ := json.Marshal(keep)
		return string(b)
	}
	directCmd := exec.Command(server[0], server[1:]...)
	direct, _ := sdkHost(t, directCmd)
	gated := p.gatedCmd(nil, []string{"--name", "everything"}, server...)
	logFile := filepath.Join(p.dir, "run.log")
	f, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gated.Stderr = f
	log := func() string { b, _ := os.ReadFile(logFile); return string(b) }
	through, _ := sdkHost(t, gated)
	defer func() {
		if t.Failed() {
			t.Logf("etdi run's stderr:\n%s", log())
		}
	}()
	if a, b := list(direct, "get-roots-list"), list(through, ""); a != b || !strings.Contains(b, `"echo"`) {
		t.Fatalf("tools through the gate:\n%.500s\nwithout:\n%.500s", b, a)
	}
	_, err = through.CallTool(context.Background(), &mcp.CallToolParams{Name: "get-roots-list"})
	if k := blockedKindOf(t, err); k != "new_tool" {
		t.Fatalf("the tool etdi check never saw: %v", err)
	}
	// The key unsigned:everything had its ':' replaced, so the file name
	// carries the key's hash.
	saved, _ := filepath.Glob(filepath.Join(p.dir, "pending", "unsigned_everything-*.json"))
	if len(saved) != 1 {
		t.Fatalf("saved listings: %v", saved)
	}
	pending := saved[0]
	for i := 0; i < 100 && !strings.Contains(log(), "--tools "+pending+" --approve"); i++ {
		time.Sleep(20 * time.Millisecond) // stderr is written beside the answer, not before it
	}
	if !strings.Contains(log(), "--tools "+pending+" --approve") {
		t.Fatalf("the review command does not name the saved listing:\n%s", log())
	}
	through.Close()
	if r := p.liveCheck(nil, "--yes", "--name", "everything", "--tools", pending); r.code != 0 || !strings.Contains(r.stdout, "approved unsigned:everything/get-roots-list") {
		t.Fatalf("approving from the saved listing: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	through, _ = sdkHost(t, p.gatedCmd(nil, []string{"--name", "everything"}, server...))
	if a, b := list(direct, ""), list(through, ""); a != b {
		t.Fatalf("after approval, tools through the gate:\n%.500s\nwithout:\n%.500s", b, a)
	}
	res, err := through.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "hi") {
		t.Fatalf("echo: %v %+v", err, res)
	}
}

// rawHost speaks newline-delimited JSON-RPC with a process, as a host
// does, and keeps every line it reads.
type rawHost struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	mu    sync.Mutex
	lines [][]byte
	got   chan []byte
}

func startRaw(t testing.TB, cmd *exec.Cmd) *rawHost {
	t.Helper()
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &rawHost{cmd: cmd, in: in, got: make(chan []byte, 1024)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			h.got <- bytes.Clone(sc.Bytes())
		}
		close(h.got)
	}()
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	return h
}

// ask sends a request and returns the line that answers it (other lines
// are kept aside).
func (h *rawHost) ask(t testing.TB, id int, method, params string) []byte {
	t.Helper()
	fmt.Fprintf(h.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-h.got:
			if !ok {
				t.Fatalf("%s: the other side ended", method)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method *string         `json:"method"`
			}
			if json.Unmarshal(line, &m) == nil && m.Method == nil && string(m.ID) == strconv.Itoa(id) {
				return line
			}
			h.mu.Lock()
			h.lines = append(h.lines, line)
			h.mu.Unlock()
		case <-timeout:
			t.Fatalf("%s: no answer", method)
		}
	}
}

func (h *rawHost) notify(method string) {
	fmt.Fprintf(h.in, `{"jsonrpc":"2.0","method":%q}`+"\n", method)
}

// Ten gates with --audit-calls and etdi check share one database; then
// every call is in a history that verifies.
//
// It stays Go: ten sessions run at once beside etdi check, which a
// script's sessions, one after another, cannot do.
func TestRunTenGates(t *testing.T) {
	p := runEnv(t)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	const calls = 5
	for g := range 10 {
		wg.Go(func() {
			cmd := p.gatedCmd(nil, []string{"--bundle", "w.etdi.json", "--audit-calls"}, fixtureCmd(fmt.Sprintf("ten-%d", g))...)
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			var se bytes.Buffer
			cmd.Stderr = &se
			if err := cmd.Start(); err != nil {
				errs <- err
				return
			}
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 1<<20), 1<<24)
			say := func(line string) string {
				fmt.Fprintln(in, line)
				if !sc.Scan() {
					return ""
				}
				return sc.Text()
			}
			say(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`)
			fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			say(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
			for i := range calls {
				if a := say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"g%d"}}}`, 3+i, g)); !strings.Contains(a, "sunny") {
					errs <- fmt.Errorf("gate %d call %d: %s %s", g, i, a, se.String())
				}
			}
			in.Close()
			if err := cmd.Wait(); err != nil {
				errs <- fmt.Errorf("gate %d: %v %s", g, err, se.String())
			}
		})
	}
	for range 3 {
		wg.Go(func() {
			if r := p.liveCheck(nil, append([]string{"--bundle", "w.etdi.json"}, fixture("ten-check")...)...); r.code != 0 {
				errs <- fmt.Errorf("check: %d %s", r.code, r.stderr)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n := len(p.callRecords())
	if n != 10*calls {
		t.Fatalf("%d call records, want %d", n, 10*calls)
	}
	p.ok("audit", "verify", "--pins", "pins.db")
}

// The whole flow for a user: approve, etdi wrap --config auto, then the
// host starts what its configuration says; it sees only approved tools,
// and a rug pull never reaches it. etdi unwrap restores the file.
//
// It stays Go: etdi wrap writes its own executable's path into the host
// configuration, and inside a script that executable is the test binary.
func TestWrapThenRun(t *testing.T) {
	t.Parallel() // its own folder, servers and store
	p := liveEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	cfgPath := filepath.Join(p.dir, ".config", "Claude", "claude_desktop_config.json")
	orig := fmt.Sprintf(`{
  // the weather server
  "mcpServers": {"weather": {"command": "node", "args": [%q, "wrapped"], "env": {"FIXTURE_CHANGE": "${MODE:-}"}}}
}`, fixtureJS)
	writeText(t, cfgPath, orig, 0o600)
	envs := []string{"ETDI_TRUST=" + filepath.Join(p.dir, "trust.json"), "ETDI_PINS=" + filepath.Join(p.dir, "pins.db")}
	if r := runEtdi(t, p.dir, envs, "check", "--config", "auto", "--yes"); r.code != 0 {
		t.Fatalf("approve: %d %s%s", r.code, r.stdout, r.stderr)
	}
	if r := runEtdi(t, p.dir, envs, "wrap", "--config", "auto"); r.code != 0 || !strings.Contains(r.stdout, "1 wrapped") {
		t.Fatalf("wrap: %d %s%s", r.code, r.stdout, r.stderr)
	}
	// What the host now starts, read as a host reads it.
	var cfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	text := readText(t, cfgPath)
	if err := json.Unmarshal([]byte(strings.Replace(text, "// the weather server", "", 1)), &cfg); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	entry := cfg.MCPServers["weather"]
	if entry.Command != etdiBin || entry.Args[0] != "run" {
		t.Fatalf("wrapped entry: %+v", entry)
	}
	steps := `[{"op":"listTools"},{"op":"call","name":"get_weather","arguments":{"city":"A"}}]`
	cmd := append([]string{entry.Command}, entry.Args...)
	tr := p.host(envs, steps, nil, cmd...)
	if len(tr.Steps[0].names(t)) != 2 || tr.Steps[1].Result == nil {
		t.Fatalf("through the wrapped entry: %s", tr.raw)
	}
	tr = p.host(append(envs, "FIXTURE_CHANGE=description"), steps, nil, cmd...)
	if strings.Contains(tr.raw, "IMPORTANT") || tr.Steps[1].blocked(t) != "rug_pull" {
		t.Fatalf("a rug pull through the wrapped entry: %s", tr.raw)
	}
	if r := runEtdi(t, p.dir, envs, "unwrap", "--config", "auto"); r.code != 0 || readText(t, cfgPath) != orig {
		t.Fatalf("unwrap: %d %s%s\n%s", r.code, r.stdout, r.stderr, readText(t, cfgPath))
	}
}

// callRecords are the call records of the history of pins.db.
func (p *pinEnv) callRecords() []pin.Record {
	p.t.Helper()
	var recs, calls []pin.Record
	if err := json.Unmarshal([]byte(p.ok("pin", "history", "--pins", "pins.db", "--json").stdout), &recs); err != nil {
		p.t.Fatal(err)
	}
	for _, r := range recs {
		if r.Type == pin.RecordCall {
			calls = append(calls, r)
		}
	}
	return calls
}
