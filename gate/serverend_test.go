package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/guard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lockedBuffer collects a server's stderr, written by the copying
// goroutine and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// everythingCommand is server-everything over stdio from testdata/mcp,
// installed with npm ci when it is not yet.
func everythingCommand(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	dir, _ := filepath.Abs("../testdata/mcp")
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return []string{"node", bin, "stdio"}
}

// A host that leaves a gate session with server-everything (a Node.js
// server of the official SDK) ends it as the server expects: its stdin
// is closed and what it still writes is read, so it prints no EPIPE
// stack trace. (It asks a host with roots for them 350 ms after the
// session starts, and a host that lists and leaves is gone by then.)
func TestGateServerEndsWithoutEPIPE(t *testing.T) {
	argv := everythingCommand(t)
	round := 0
	{
		g, err := New(gateOptions(t))
		if err != nil {
			t.Fatal(err)
		}
		stderr := &lockedBuffer{}
		server, err := guard.StartServer(guard.Launch{Command: argv}, stderr)
		if err != nil {
			t.Fatal(err)
		}
		hostIn, toGate := io.Pipe()
		fromGate, hostOut := io.Pipe()
		host := guard.StreamConn(hostIn, hostOut, func() error { hostIn.Close(); return hostOut.Close() })
		done := make(chan error, 1)
		go func() { done <- g.Run(context.Background(), host, server) }()
		answers := make(chan string, 16)
		go func() {
			var buf bytes.Buffer
			b := make([]byte, 64<<10)
			for {
				n, err := fromGate.Read(b)
				buf.Write(b[:n])
				for {
					line, rest, ok := bytes.Cut(buf.Bytes(), []byte("\n"))
					if !ok {
						break
					}
					if bytes.Contains(line, []byte(`"id"`)) && !bytes.Contains(line, []byte(`"method"`)) {
						answers <- string(line)
					}
					buf = *bytes.NewBuffer(append([]byte(nil), rest...))
				}
				if err != nil {
					close(answers)
					return
				}
			}
		}()
		send := func(msg string) {
			if _, err := io.WriteString(toGate, msg+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		await := func(id int) string {
			t.Helper()
			for a := range answers {
				if strings.Contains(a, fmt.Sprintf(`"id":%d`, id)) {
					return a
				}
			}
			t.Fatalf("round %d: no answer %d; server stderr:\n%s", round, id, stderr.String())
			return ""
		}
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"host","version":"1"}}}`)
		await(1)
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		await(2)
		toGate.Close() // the host leaves
		if err := <-done; err != nil {
			t.Fatalf("round %d: the gate: %v", round, err)
		}
		got := stderr.String()
		if strings.Contains(got, "EPIPE") {
			t.Fatalf("round %d: server-everything wrote EPIPE at the session's end:\n%s", round, got)
		}
	}
}

// A Streamable HTTP server (go-sdk, with an event store) that ends a tool
// call's event stream before the answer, as a server behind a proxy
// does: the host receives the answer through the gate, which resumed the
// stream with Last-Event-ID.
func TestGateResumesServerStream(t *testing.T) {
	opts := gateOptions(t)
	server := weatherServer("Get the weather.")
	approveServer(t, server, opts.Options)
	server.AddTool(&mcp.Tool{Name: "get_weather", Description: "Get the weather.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 20 * time.Millisecond})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny after the stream ended"}}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}))
	defer srv.Close()
	conn, err := guard.StartServer(guard.Launch{URL: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	host, hostEnd := pipePair()
	done := make(chan error, 1)
	go func() { done <- g.Run(context.Background(), hostEnd, conn) }()
	defer func() { host.Close(); <-done }()
	h := &benchHost{c: host}
	h.ask(t, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}`)
	host.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	h.ask(t, "tools/list", `{}`)
	if a := h.ask(t, "tools/call", `{"name":"get_weather","arguments":{}}`); !strings.Contains(string(a), "sunny after the stream ended") {
		t.Fatalf("answer through the gate: %s", a)
	}
}
