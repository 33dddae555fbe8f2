package gate

// Scopes a person gives unsigned tools at approval (docs/storage.md#scopes-of-unsigned-tools) reach
// the call-time policies at the gate as a signed tool's permissions do.

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/policy"
	"github.com/etdi-dev/etdi/trust"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const polScopes = `
@id("baseline")
permit (principal, action == Etdi::Action::"call", resource);

@id("no-writes")
forbid (principal, action == Etdi::Action::"call", resource)
when { resource.scopes.contains("files:write") };
`

// startUnsignedPol runs a gate before an unsigned server offering
// read_file and write_file, approved with scopes.
func startUnsignedPol(t *testing.T, scopes map[string][]string) (*polHost, *polServer, []guard.CallDecision) {
	t.Helper()
	srv := &polServer{s: mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1.0.0"}, nil)}
	srv.add(polTool{name: "read_file"}, "Read a file.")
	srv.add(polTool{name: "write_file"}, "Create or overwrite a file.")
	ctx := context.Background()
	conn := connInMemory(t, srv.s)
	l, err := guard.List(ctx, guard.SDKConn(conn), guard.FetchOptions{})
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Options: guard.Options{Policy: &trust.Policy{Unsigned: trust.Warn}, Pins: filepath.Join(t.TempDir(), "pins.db"),
		By: "tester", Name: "files"}, Timeout: 5 * time.Second, FlushEvery: 20 * time.Millisecond}
	r, err := guard.Check(ctx, l, opts.Options)
	if err != nil {
		t.Fatal(err)
	}
	ap, err := guard.Approve(ctx, r, guard.ApproveOptions{Scopes: scopes})
	if err != nil || ap.ExitCode() != 0 {
		t.Fatalf("approve: %v %+v", err, ap)
	}
	set, err := policy.Parse(policy.Source{Name: "scopes.cedar", Text: []byte(polScopes)})
	if err != nil {
		t.Fatal(err)
	}
	calls := guard.CallDecisions(r.After(ap.Comparison), set, "")
	opts.Policies = set
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hostC, hostEnd := pipePair()
	h := newPolHost(hostC)
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, hostEnd, guard.SDKConn(cc)) }()
	t.Cleanup(func() {
		hostC.Close()
		ss.Close()
		<-done
	})
	h.send(t, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":`+hostNoElicit+`}`)
	h.answer(t, `"init"`)
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(t, `{"jsonrpc":"2.0","id":"list","method":"tools/list","params":{}}`)
	if list := h.answer(t, `"list"`); !strings.Contains(list, "write_file") {
		t.Fatalf("list %s", list)
	}
	return h, srv, calls
}

// A rule on the scope the approver gave write_file forbids it; read_file,
// given none, is called.
func TestGateUnsignedScopes(t *testing.T) {
	h, srv, calls := startUnsignedPol(t, map[string][]string{"write_file": {"files:write"}})
	i := slices.IndexFunc(calls, func(c guard.CallDecision) bool { return c.Tool == "write_file" })
	if i < 0 || calls[i].Effect != policy.Forbid || !slices.Equal(calls[i].Policies, []string{"no-writes"}) {
		t.Fatalf("call decisions %+v", calls)
	}
	h.call(t, "1", "write_file", `{"path":"/tmp/x","content":"y"}`)
	b := blockedData(t, h.answer(t, "1"))
	if b.Kind != PolicyForbid || !slices.Equal(b.Policies, []string{"no-writes"}) {
		t.Fatalf("blocked %+v", b)
	}
	h.call(t, "2", "read_file", `{"path":"/tmp/x"}`)
	wantResult(t, h.answer(t, "2"), "read_file")
	var ran []string
	for _, c := range srv.ran() {
		ran = append(ran, c.tool)
	}
	if !slices.Equal(ran, []string{"read_file"}) {
		t.Fatalf("the server ran %v", ran)
	}
}

// Without scopes the same rule does not apply: the scopes are what it
// reads, not the tool's name.
func TestGateUnsignedNoScopes(t *testing.T) {
	h, _, _ := startUnsignedPol(t, nil)
	h.call(t, "1", "write_file", `{"path":"/tmp/x","content":"y"}`)
	wantResult(t, h.answer(t, "1"), "write_file")
}

// A signed server's tools take no scopes at approval: the approval fails
// and approves nothing.
func TestApproveScopesSignedRefused(t *testing.T) {
	srv := newPolServer()
	ctx := context.Background()
	opts, _ := signPolServer(t, srv)
	opts.Pins = filepath.Join(t.TempDir(), "fresh.db")
	conn := connInMemory(t, srv.s)
	l, err := guard.List(ctx, guard.SDKConn(conn), guard.FetchOptions{})
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	r, err := guard.Check(ctx, l, opts.Options)
	if err != nil {
		t.Fatal(err)
	}
	for _, ao := range []guard.ApproveOptions{{Scopes: map[string][]string{"run_shell": {"shell:none"}}}, {ScopesAll: []string{"files:none"}}} {
		ap, err := guard.Approve(ctx, r, ao)
		if err == nil || !strings.Contains(err.Error(), "signed") || (ap != nil && len(ap.Approved) != 0) {
			out, _ := json.Marshal(ap)
			t.Fatalf("%v %s", err, out)
		}
	}
}
