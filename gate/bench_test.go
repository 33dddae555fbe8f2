package gate

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/policy"
	"github.com/etdi-dev/etdi/trust"
)

// chanConn is one end of an in-memory message pipe.
type chanConn struct {
	in   <-chan []byte
	out  chan<- []byte
	done chan struct{}
}

func (c *chanConn) Read(ctx context.Context) ([]byte, error) {
	// What was written before the pipe closed is read first, as from a
	// closed pipe of the system.
	select {
	case m, ok := <-c.in:
		if !ok {
			return nil, io.EOF
		}
		return m, nil
	default:
	}
	select {
	case m, ok := <-c.in:
		if !ok {
			return nil, io.EOF
		}
		return m, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *chanConn) Write(ctx context.Context, m []byte) error {
	select {
	case c.out <- m:
		return nil
	case <-c.done:
		return io.EOF
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *chanConn) Close() error {
	select {
	case <-c.done:
	default:
		close(c.done)
	}
	return nil
}

// pipePair returns two connected ends; closing either ends both.
func pipePair() (*chanConn, *chanConn) {
	a, b, done := make(chan []byte, 64), make(chan []byte, 64), make(chan struct{})
	return &chanConn{in: a, out: b, done: done}, &chanConn{in: b, out: a, done: done}
}

// fakeServer answers initialize, tools/list (n tools) and tools/call with
// fixed bytes, as fast as a server can: what is measured is the gate.
func fakeServer(c *chanConn, tools int) {
	var list []byte
	list = append(list, `{"tools":[`...)
	for i := range tools {
		if i > 0 {
			list = append(list, ',')
		}
		list = fmt.Appendf(list, `{"name":"tool_%04d","description":"Synthetic tool number %d, which reads a file from the workspace and returns its text.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"A path in the workspace"}},"required":["path"]},"annotations":{"readOnlyHint":true}}`, i, i)
	}
	list = append(list, `]}`...)
	ctx := context.Background()
	for {
		data, err := c.Read(ctx)
		if err != nil {
			return
		}
		m, err := mcpclient.Decode(data)
		if err != nil || !m.Request || m.ID == nil {
			continue
		}
		var res []byte
		switch m.Method {
		case "initialize":
			res = []byte(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`)
		case "tools/list":
			res = list
		case "tools/call":
			res = []byte(`{"content":[{"type":"text","text":"sunny"}]}`)
		default:
			c.Write(ctx, mcpclient.EncodeError(m.ID, -32601, "no", nil))
			continue
		}
		c.Write(ctx, mcpclient.EncodeResult(m.ID, res))
	}
}

// benchHost is a host over a pipe: it sends requests and waits for the
// answers, in order.
type benchHost struct {
	c *chanConn
	n int
}

func (h *benchHost) ask(b testing.TB, method, params string) []byte {
	h.n++
	msg := `{"jsonrpc":"2.0","id":` + strconv.Itoa(h.n) + `,"method":"` + method + `","params":` + params + `}`
	if err := h.c.Write(context.Background(), []byte(msg)); err != nil {
		b.Fatal(err)
	}
	for {
		data, err := h.c.Read(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if m, err := mcpclient.Decode(data); err == nil && !m.Request && string(m.ID) == strconv.Itoa(h.n) {
			return data
		}
	}
}

// session starts a fake server of n tools, directly or behind a gate
// whose pins approve every tool, and initializes it.
func session(b testing.TB, n int, gated, audit bool) (*benchHost, func()) {
	return sessionWith(b, n, gated, audit, nil)
}

// sessionWith is session with call-time policies (nil: none).
func sessionWith(b testing.TB, n int, gated, audit bool, set *policy.Set) (*benchHost, func()) {
	host, hostEnd := pipePair()
	if !gated {
		go fakeServer(hostEnd, n)
		h := &benchHost{c: host}
		h.ask(b, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
		return h, func() { host.Close() }
	}
	opts := Options{Options: guard.Options{Policy: &trust.Policy{Unsigned: trust.Warn}, Pins: filepath.Join(b.TempDir(), "pins.db"),
		Name: "fake", By: "bench"}, Timeout: time.Minute, AuditCalls: audit, Policies: set}
	// Approve the fake server's tools first, over a connection of its own.
	sa, sb := pipePair()
	go fakeServer(sb, n)
	l, err := guard.List(context.Background(), sa, guard.FetchOptions{})
	if err != nil {
		b.Fatal(err)
	}
	r, err := guard.Check(context.Background(), l, opts.Options)
	if err != nil {
		b.Fatal(err)
	}
	if a, err := guard.Approve(context.Background(), r, guard.ApproveOptions{}); err != nil || a.ExitCode() != 0 {
		b.Fatalf("approve: %v", err)
	}
	sa.Close()
	server, serverEnd := pipePair()
	go fakeServer(serverEnd, n)
	g, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Run(context.Background(), hostEnd, server) }()
	h := &benchHost{c: host}
	h.ask(b, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	h.c.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	return h, func() {
		host.Close()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGateCall measures a tools/call round trip with and without the
// gate (a host and a server in memory, so the difference is the gate): the
// median round trip is reported as median-µs.
func BenchmarkGateCall(b *testing.B) {
	for _, gated := range []bool{false, true} {
		name := "direct"
		if gated {
			name = "gated"
		}
		b.Run(name, func(b *testing.B) {
			h, end := session(b, 10, gated, false)
			defer end()
			if gated {
				h.ask(b, "tools/list", `{}`)
			}
			timeCalls(b, h)
		})
	}
}

// BenchmarkGateCallPolicies is the gated BenchmarkGateCall with 100
// call-time policies that allow the call: the cost of authorizing it.
func BenchmarkGateCallPolicies(b *testing.B) {
	var src strings.Builder
	src.WriteString("@id(\"baseline\") permit (principal, action, resource);\n")
	for i := range 99 {
		fmt.Fprintf(&src, "@id(\"p%d\") forbid (principal, action, resource) when { resource.scopes.contains(\"s%d:*\") || context.callsOfThisTool > %d || resource.name like \"*_x%d\" };\n", i, i, 1_000_000_000+i, i)
	}
	set, err := policy.Parse(policy.Source{Name: "bench.cedar", Text: []byte(src.String())})
	if err != nil {
		b.Fatal(err)
	}
	h, end := sessionWith(b, 10, true, false, set)
	defer end()
	h.ask(b, "tools/list", `{}`)
	timeCalls(b, h)
}

// timeCalls calls one tool b.N times and reports the median round trip.
func timeCalls(b *testing.B, h *benchHost) {
	params := `{"name":"tool_0003","arguments":{"path":"notes.txt"}}`
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		h.ask(b, "tools/call", params)
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/1e3, "median-µs")
}

// BenchmarkGateList measures tools/list of 1,000 tools through the gate,
// checked and compared with the pins on every page.
func BenchmarkGateList(b *testing.B) {
	for _, gated := range []bool{false, true} {
		name := "direct"
		if gated {
			name = "gated"
		}
		b.Run(name, func(b *testing.B) {
			h, end := session(b, 1000, gated, false)
			defer end()
			var n int
			for b.Loop() {
				data := h.ask(b, "tools/list", `{}`)
				n = len(data)
			}
			b.SetBytes(int64(n))
		})
	}
}

// BenchmarkGateCallsAudited is BenchmarkGateCall with --audit-calls: each
// call is spooled, and written to the history in batches.
func BenchmarkGateCallsAudited(b *testing.B) {
	h, end := session(b, 10, true, true)
	defer end()
	h.ask(b, "tools/list", `{}`)
	params := `{"name":"tool_0003","arguments":{"path":"notes.txt"}}`
	for b.Loop() {
		h.ask(b, "tools/call", params)
	}
}

// TestGateMemoryFlat makes 20,000 calls through one gate (a million with
// -gate-calls 1000000) and reports the live heap before and after: what a gate
// keeps per call is released. It fails only when the heap grows by more
// than the calls could explain if each kept a few hundred bytes.
func TestGateMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	calls := *gateCalls
	h, end := session(t, 10, true, false)
	defer end()
	h.ask(t, "tools/list", `{}`)
	params := `{"name":"tool_0003","arguments":{"path":"notes.txt"}}`
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	for range 1000 {
		h.ask(t, "tools/call", params)
	}
	before := heap()
	start := time.Now()
	for range calls {
		h.ask(t, "tools/call", params)
	}
	elapsed := time.Since(start)
	after := heap()
	t.Logf("%d calls in %v (%.0f calls/s); live heap %d KiB before, %d KiB after",
		calls, elapsed.Round(time.Millisecond), float64(calls)/elapsed.Seconds(), before>>10, after>>10)
	if after > before+uint64(calls)*64 {
		t.Fatalf("the heap grew from %d to %d bytes over %d calls", before, after, calls)
	}
}

var gateCalls = flag.Int("gate-calls", 20_000, "calls TestGateMemoryFlat makes through one gate")
