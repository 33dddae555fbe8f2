package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/trust"
)

var (
	mcpFixtures, _ = filepath.Abs("../testdata/mcp")
	npmOnce        sync.Once
	npmErr         error
)

// everything is the command of the real server-everything from npm
// (testdata/mcp, installed from its lockfile once per test run).
func everything(t *testing.T) guard.Launch {
	t.Helper()
	bin := filepath.Join(mcpFixtures, "node_modules", ".bin", "mcp-server-everything")
	npmOnce.Do(func() {
		if _, err := os.Stat(bin); err == nil {
			return
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = mcpFixtures
		if out, err := cmd.CombinedOutput(); err != nil {
			npmErr = fmt.Errorf("npm ci in %s: %v\n%s", mcpFixtures, err, out)
		}
	})
	if npmErr != nil {
		t.Fatal(npmErr)
	}
	return guard.Launch{Command: []string{"node", bin, "stdio"}}
}

func listingNames(l *guard.Listing) []string {
	var out []string
	for _, t := range l.Tools {
		out = append(out, t.Name)
	}
	return out
}

// hostSession talks to a gate as a host that declares caps: it answers
// roots/list with no roots, and collects what the gate logs.
type hostSession struct {
	t    *testing.T
	host *chanConn
	n    int
	log  func() []string
}

func gateSession(t *testing.T, opts Options, s guard.Launch) *hostSession {
	t.Helper()
	var mu sync.Mutex
	var lines []string
	opts.Log = func(l string) { mu.Lock(); lines = append(lines, l); mu.Unlock() }
	g, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	server, err := guard.StartServer(s, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	host, hostEnd := pipePair()
	done := make(chan error, 1)
	go func() { done <- g.Run(context.Background(), hostEnd, server) }()
	t.Cleanup(func() {
		host.Close()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("the gate did not end")
		}
	})
	return &hostSession{t: t, host: host, log: func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(lines) }}
}

// ask sends a request and returns its result, answering the server's
// requests (roots/list: no roots) meanwhile.
func (h *hostSession) ask(method, params string) json.RawMessage {
	h.t.Helper()
	h.n++
	id := fmt.Sprint(h.n)
	if err := h.host.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"`+method+`","params":`+params+`}`)); err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		data, err := h.host.Read(ctx)
		if err != nil {
			h.t.Fatalf("no answer to %s: %v", method, err)
		}
		m, err := mcpclient.Decode(data)
		if err != nil {
			continue
		}
		if m.Request && m.ID != nil {
			answer := mcpclient.EncodeError(m.ID, -32601, "no", nil)
			if m.Method == "roots/list" {
				answer = mcpclient.EncodeResult(m.ID, []byte(`{"roots":[]}`))
			}
			h.host.Write(context.Background(), answer)
			continue
		}
		if !m.Request && string(m.ID) == id {
			if m.Error {
				h.t.Fatalf("%s answered with an error: %s", method, data)
			}
			return m.Result
		}
	}
}

func (h *hostSession) init(caps string) {
	h.t.Helper()
	h.ask("initialize", `{"protocolVersion":"2025-06-18","capabilities":`+caps+`,"clientInfo":{"name":"test-host","version":"1"}}`)
	h.host.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
}

func (h *hostSession) tools() []string {
	h.t.Helper()
	var r struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(h.ask("tools/list", `{}`), &r); err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Name)
	}
	return out
}

func (h *hostSession) withheld() []string {
	var out []string
	for _, l := range h.log() {
		if strings.HasPrefix(l, "etdi: withheld ") {
			out = append(out, l)
		}
	}
	return out
}

// Approve what the host will be offered: server-everything offers
// get-roots-list only to a client that declares roots. A listing without
// capabilities does not see it; one that declares roots does, and once
// that listing is approved, a gate session whose host declares roots lets
// it through with nothing withheld: the gate relays the host's
// initialize, so its own listing is made under the host's capabilities.
// An approval made without roots leaves it withheld from that host (and
// saved for review under the host's capabilities), never shown.
func TestCapabilitiesApproveWhatTheHostIsOffered(t *testing.T) {
	srv := everything(t)
	ctx := context.Background()
	bare, err := guard.Fetch(ctx, srv, guard.FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(listingNames(bare), "get-roots-list") {
		t.Fatalf("a listing without capabilities is offered get-roots-list: %v", listingNames(bare))
	}
	caps, err := guard.ParseCapabilities("roots")
	if err != nil {
		t.Fatal(err)
	}
	withRoots, err := guard.Fetch(ctx, srv, guard.FetchOptions{Capabilities: caps})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(listingNames(withRoots), "get-roots-list") {
		t.Fatalf("a listing that declares roots is not offered get-roots-list: %v", listingNames(withRoots))
	}
	approve := func(l *guard.Listing) Options {
		t.Helper()
		opts := Options{Options: guard.Options{Policy: &trust.Policy{Unsigned: trust.Warn}, Pins: filepath.Join(t.TempDir(), "pins.db"),
			Name: "everything", By: "tester"}, Timeout: 20 * time.Second, FlushEvery: 50 * time.Millisecond}
		r, err := guard.Check(ctx, l, opts.Options)
		if err != nil {
			t.Fatal(err)
		}
		if ap, err := guard.Approve(ctx, r, guard.ApproveOptions{AcceptInstructions: true}); err != nil || ap.ExitCode() != 0 {
			t.Fatalf("approve: %v %+v", err, ap)
		}
		return opts
	}

	t.Run("approved with roots", func(t *testing.T) {
		opts := approve(withRoots)
		h := gateSession(t, opts, srv)
		h.init(`{"roots":{}}`)
		if got := h.tools(); !slices.Contains(got, "get-roots-list") || len(h.withheld()) > 0 {
			t.Fatalf("a host with roots, through the gate: tools %v, withheld %q", got, h.withheld())
		}
		// A host without roots is offered, and gets, what check saw
		// without capabilities.
		h2 := gateSession(t, opts, srv)
		h2.init(`{}`)
		if got := h2.tools(); slices.Contains(got, "get-roots-list") || len(got) != len(bare.Tools) || len(h2.withheld()) > 0 {
			t.Fatalf("a host without roots, through the gate: tools %v, withheld %q", got, h2.withheld())
		}
	})
	t.Run("approved without roots", func(t *testing.T) {
		opts := approve(bare)
		h := gateSession(t, opts, srv)
		h.init(`{"roots":{}}`)
		got := h.tools()
		if slices.Contains(got, "get-roots-list") || len(got) != len(bare.Tools) {
			t.Fatalf("tools through the gate: %v", got)
		}
		w := strings.Join(h.withheld(), "\n")
		if !strings.Contains(w, `withheld tool "get-roots-list": new_tool`) || len(h.withheld()) != 1 {
			t.Fatalf("get-roots-list is not reported withheld: %s\n%q", w, h.log())
		}
		// The gate saved its listing, made under the host's capabilities:
		// reviewing it approves get-roots-list for the next session.
		saved, _ := filepath.Glob(filepath.Join(filepath.Dir(opts.Pins), "pending", "*.json"))
		if len(saved) != 1 {
			t.Fatalf("saved for review: %v", saved)
		}
		if got := approveFile(t, opts.Options, saved[0]); strings.Join(got, " ") != "get-roots-list" {
			t.Fatalf("the review approved %v", got)
		}
		h2 := gateSession(t, opts, srv)
		h2.init(`{"roots":{}}`)
		if got := h2.tools(); !slices.Contains(got, "get-roots-list") || len(h2.withheld()) > 0 {
			t.Fatalf("after the review: tools %v, withheld %q", got, h2.withheld())
		}
	})
}
