package gate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// refusalHost drives ServeRefusal over a pipe, as a host over stdio.
type refusalHost struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func startRefusal(t *testing.T, r *Refusal, log func(string)) *refusalHost {
	t.Helper()
	hostIn, toEtdi := io.Pipe()
	fromEtdi, hostOut := io.Pipe()
	conn := guard.StreamConn(hostIn, hostOut, func() error { hostOut.Close(); return nil })
	h := &refusalHost{t: t, in: toEtdi, out: bufio.NewReader(fromEtdi), done: make(chan error, 1)}
	go func() { h.done <- ServeRefusal(context.Background(), conn, r, log) }()
	t.Cleanup(func() { toEtdi.Close(); fromEtdi.Close() })
	return h
}

func (h *refusalHost) send(msg string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, msg+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

func (h *refusalHost) next() *mcpclient.Message {
	h.t.Helper()
	line, err := h.out.ReadBytes('\n')
	if err != nil {
		h.t.Fatalf("reading what etdi sent: %v", err)
	}
	m, err := mcpclient.Decode(line)
	if err != nil {
		h.t.Fatalf("etdi sent %q: %v", line, err)
	}
	return m
}

func testRefusal() *Refusal {
	return &Refusal{Server: "unsigned:notes", Code: finding.ExitRugPull, Version: "v9.9.9",
		Findings: []finding.Finding{{Kind: finding.RugPull, Severity: finding.Error, Tool: "add_note",
			Message: "tool add_note was approved served by npm notes@1.0.0 sha512-A; the command now runs npm notes@1.0.1 sha512-B\x1b[2J"}},
		Review:  "etdi check --pins /p/pins.db --name notes --approve --server -- npx -y notes@1.0.1",
		Approve: "etdi pin approve --pins /p/pins.db --name notes --tool add_note --server -- npx -y notes@1.0.1"}
}

// A refused server's session is answered by etdi: initialize with etdi's
// own serverInfo and instructions that say what happened, empty lists, a
// warning after initialized, ping answered, every call refused naming the
// review command; it lasts until the host leaves. What the host is told
// never holds the command that approves without asking (etdi pin approve):
// a model reading it could run it.
func TestServeRefusalSession(t *testing.T) {
	r := testRefusal()
	var logged []string
	h := startRefusal(t, r, func(l string) { logged = append(logged, l) })
	wantRefusalInitialize(t, h, r)
	wantRefusalWarning(t, h, r)
	wantRefusedRequests(t, h, r)
	// A second initialized tells nothing more; notifications get no answer.
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}`)
	h.send(`not json`)
	if line, err := h.out.ReadString('\n'); err != nil || !strings.Contains(line, `"id":null,"error":{"code":-32700`) {
		t.Fatalf("not JSON: %q %v", line, err)
	}
	h.in.Close()
	if err := <-h.done; err != nil {
		t.Fatalf("the host left: %v", err)
	}
	if len(logged) != 4 || !strings.Contains(logged[0], "refused tools/call") {
		t.Fatalf("log: %q", logged)
	}
}

// wantRefusalInitialize: the refusal answers initialize as a server
// named etdi whose instructions say what was refused and how to review it.
func wantRefusalInitialize(t *testing.T, h *refusalHost, r *Refusal) {
	t.Helper()
	h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	m := h.next()
	var init struct {
		ProtocolVersion string
		ServerInfo      struct{ Name, Version string }
		Instructions    string
		Capabilities    map[string]json.RawMessage
	}
	if err := json.Unmarshal(m.Result, &init); err != nil || m.IDKey() != "n:1" {
		t.Fatalf("initialize: %v %s", err, m.Result)
	}
	if init.ProtocolVersion != "2025-03-26" || init.ServerInfo.Name != "etdi" || init.ServerInfo.Version != "v9.9.9" ||
		!strings.Contains(init.Instructions, "did not start unsigned:notes") || !strings.Contains(init.Instructions, r.Review) ||
		strings.Contains(init.Instructions, "pin approve") || strings.Contains(init.Instructions, "\x1b") || init.Capabilities["tools"] == nil {
		t.Fatalf("initialize: %+v", init)
	}
}

// wantRefusalWarning: once initialized, the host is warned by etdi's
// logger of what was refused, with the review command.
func wantRefusalWarning(t *testing.T, h *refusalHost, r *Refusal) {
	t.Helper()
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	m := h.next()
	var note struct {
		Level, Logger string
		Data          struct {
			Message, Review, Approve string
			ExitCode                 int
			Refused                  []struct{ Name, Kind string }
		}
	}
	if err := json.Unmarshal(m.Params, &note); err != nil || m.Method != "notifications/message" || note.Level != "warning" || note.Logger != EtdiLogger ||
		note.Data.Review != r.Review || note.Data.Approve != "" || strings.Contains(string(m.Params), "pin approve") || note.Data.ExitCode != 11 ||
		len(note.Data.Refused) != 1 || note.Data.Refused[0].Name != "add_note" || note.Data.Refused[0].Kind != "rug_pull" {
		t.Fatalf("the warning: %v %s %s", err, m.Method, m.Params)
	}
}

// wantRefusedRequests: ping and the lists are answered (empty), every
// other request is refused with BlockedCode and the review command.
func wantRefusedRequests(t *testing.T, h *refusalHost, r *Refusal) {
	t.Helper()
	h.send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	if m := h.next(); m.IDKey() != "s:p" || m.Error || string(m.Result) != "{}" {
		t.Fatalf("ping: %+v", m)
	}
	for method, list := range refusalLists {
		h.send(`{"jsonrpc":"2.0","id":7,"method":"` + method + `"}`)
		if m := h.next(); m.Error || string(m.Result) != list {
			t.Fatalf("%s: %s", method, m.Result)
		}
	}
	for _, req := range []string{
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"add_note","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"p"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"anything/else"}`,
	} {
		h.send(req)
		m := h.next()
		var data struct{ Etdi, Kind, Review string }
		json.Unmarshal(m.Result, &data)
		if !m.Error || m.ErrCode != "-32090" || !strings.Contains(m.ErrMsg, r.Review) {
			t.Fatalf("%s: %+v", req, m)
		}
	}
}

// An unknown protocol version is answered with etdi's own.
func TestServeRefusalUnknownProtocol(t *testing.T) {
	h := startRefusal(t, testRefusal(), nil)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}`)
	var init struct{ ProtocolVersion string }
	if m := h.next(); json.Unmarshal(m.Result, &init) != nil || init.ProtocolVersion != mcpclient.ProtocolVersion {
		t.Fatalf("initialize: %s", m.Result)
	}
	h.in.Close()
	<-h.done
}

// Preflight refuses a replaced implementation of approved tools, names
// the exact commands, and lets the approved one start.
func TestAttackPreflightReplacedImplementation(t *testing.T) {
	ctx := context.Background()
	opts := gateOptions(t)
	dir := filepath.Dir(opts.Pins)
	genuine := guard.ResolveOrigin(ctx, guard.Launch{Command: []string{script(t, dir, "weather", "exec weather-server")}, Env: []string{}})
	other := guard.ResolveOrigin(ctx, guard.Launch{Command: []string{script(t, dir, "weather-evil", "exec evil-server")}, Env: []string{}})
	opts.Origin = genuine
	path, _ := pendingOf(t, opts)
	approveSaved(t, path, opts)
	opts.Review, opts.ReviewTarget = "etdi check --pins "+opts.Pins+" --name weather", "--server -- "+filepath.Join(dir, "weather-evil")
	if fs, r, err := Preflight(genuine, opts); err != nil || r != nil || len(fs) != 0 {
		t.Fatalf("the approved program: %v %+v %+v", err, r, fs)
	}
	fs, r, err := Preflight(other, opts)
	if err != nil || r == nil || len(fs) != 1 || r.Code != finding.ExitRugPull || r.Server != "unsigned:weather" {
		t.Fatalf("another program: %v %+v %+v", err, r, fs)
	}
	if r.Review != opts.Review+" --approve "+opts.ReviewTarget ||
		r.Approve != "etdi pin approve --pins "+opts.Pins+" --name weather --tool get_weather "+opts.ReviewTarget {
		t.Fatalf("commands: %q / %q", r.Review, r.Approve)
	}
	// A configured credential is never shown, even where what runs names
	// it (a program named after a token).
	secret := "tok-" + strings.Repeat("Zq9", 8)
	masked := guard.ResolveOrigin(ctx, guard.Launch{Command: []string{script(t, dir, secret, "exec evil-server")}, Env: []string{}})
	opts.Credentials = []guard.Credential{{Where: "argv", Value: secret}}
	if _, r, _ := Preflight(masked, opts); r == nil || strings.Contains(r.Message(), secret) || !strings.Contains(r.Message(), "get_weather") {
		t.Fatalf("a credential in a finding: %+v", r)
	}
	opts.Credentials = nil
	// Read-only pins (a team lockfile) approve nothing: no approval named.
	opts.ReadOnly = true
	if _, r, _ := Preflight(other, opts); r == nil || r.Approve != "" || strings.Contains(r.Review, "--approve") {
		t.Fatalf("read-only: %+v", r)
	}
}

// Nothing pinned refuses nothing; pins that cannot be read fail closed.
func TestPreflightNothingPinned(t *testing.T) {
	opts := gateOptions(t)
	o := guard.ResolveOrigin(context.Background(), guard.Launch{Command: []string{filepath.Join(t.TempDir(), "missing")}, Env: []string{}})
	if fs, r, err := Preflight(o, opts); err != nil || r != nil || len(fs) != 0 {
		t.Fatalf("nothing pinned: %v %+v %+v", err, r, fs)
	}
	// Pins that cannot be read start nothing.
	opts.Pins = t.TempDir() // a directory, not a database
	if _, r, err := Preflight(o, opts); err == nil || r != nil {
		t.Fatalf("unreadable pins: %v %+v", err, r)
	}
}

// approveSaved approves the listing a gate saved for review, as its
// review command does.
func approveSaved(t *testing.T, path string, opts Options) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := guard.ReadListing(data)
	if err != nil {
		t.Fatal(err)
	}
	review := opts.Options
	review.Origin = nil
	r, err := guard.Check(context.Background(), l, review)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := guard.Approve(context.Background(), r, guard.ApproveOptions{}); err != nil || a.ExitCode() != 0 {
		t.Fatalf("approve: %v %+v", err, a)
	}
}

// Over --listen every host session of a refused server is answered by
// etdi, with a real MCP client: its own serverInfo, no tools, the warning,
// calls refused; the server is never started.
func TestListenHTTPRefusal(t *testing.T) {
	var started atomic.Int32
	h, err := ListenHTTP("127.0.0.1:0", HTTPOptions{Refusal: testRefusal(),
		Upstream: func(context.Context) (guard.Conn, error) { started.Add(1); return nil, errors.New("not to be started") }})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	warned := make(chan *mcp.LoggingMessageParams, 4)
	for range 2 {
		cs := connect(t, h, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { warned <- r.Params }}, false)
		init := cs.InitializeResult()
		if init.ServerInfo.Name != "etdi" || !strings.Contains(init.Instructions, "etdi did not start unsigned:notes") {
			t.Fatalf("initialize: %+v", init)
		}
		lt, err := cs.ListTools(listenCtx(t), nil)
		if err != nil || len(lt.Tools) != 0 {
			t.Fatalf("tools: %v %+v", err, lt)
		}
		_, err = cs.CallTool(listenCtx(t), &mcp.CallToolParams{Name: "add_note"})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != BlockedCode || !strings.Contains(we.Message, "etdi check") {
			t.Fatalf("call: %v", err)
		}
		if w := recv(t, "the warning", warned); w.Level != "warning" || w.Logger != EtdiLogger {
			t.Fatalf("warning: %+v", w)
		}
		cs.Close()
	}
	if started.Load() != 0 {
		t.Fatal("the refused server was started")
	}
}

// What a refusal tells the host is bounded: each finding clipped, at most
// maxRefusalShown of them, the rest counted; warnings are not listed.
func TestRefusalMessageBounded(t *testing.T) {
	r := testRefusal()
	r.Findings = nil
	for range 7 {
		r.Findings = append(r.Findings, finding.Finding{Kind: finding.RugPull, Severity: finding.Error, Tool: "t", Message: strings.Repeat("x", 100_000)})
	}
	r.Findings = append(r.Findings, finding.Finding{Kind: finding.MixedScript, Severity: finding.Warning, Message: "a warning"})
	msg := r.Message()
	if len(msg) > 6*600+len(r.Review)+len(r.Approve) || !strings.Contains(msg, "And 2 more.") || strings.Contains(msg, "a warning") {
		t.Fatalf("%d bytes: %.300s", len(msg), msg)
	}
}

// A server has a command or a URL: both is refused, nothing started.
func TestStartServerCommandAndURL(t *testing.T) {
	c, err := guard.StartServer(guard.Launch{Command: []string{"true"}, URL: "http://127.0.0.1:1/mcp"}, nil)
	if err == nil {
		c.Close()
		t.Fatal("a server with a command and a URL was started")
	}
}

// The gate's own error answers never show a configured credential, even
// one the host quotes back (a tool named with it).
func TestGateErrorMasksCredential(t *testing.T) {
	opts := gateOptions(t)
	secret := "sk-" + strings.Repeat("Qw7", 8)
	opts.Credentials = []guard.Credential{{Where: "argv", Value: secret}}
	cs, _ := gatedClient(t, weatherServer("Get the weather."), opts)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "x" + secret})
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("the answer: %v", err)
	}
}
