package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resumingServer is a Streamable HTTP server on 127.0.0.1 whose event
// stream for a request (tools/list, tools/call) ends before the answer,
// after a priming event (prime, an "id" and "retry" line pair, or ""),
// and which sends the answer on a GET that carries Last-Event-ID, when
// getStatus is 200 and resumed is false. It records every GET's
// Last-Event-ID.
type resumingServer struct {
	prime     string
	getStatus int
	// closesAlways: a resuming GET too ends without the answer, after a
	// priming event of its own.
	closesAlways bool

	mu      sync.Mutex
	pending string // the id of the request not yet answered (JSON)
	gets    []string
	n       int
}

func (rs *resumingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	w.Header().Set("Mcp-Session-Id", "s-1")
	switch r.Method {
	case http.MethodDelete:
		return
	case http.MethodGet:
		last := r.Header.Get("Last-Event-ID")
		rs.gets = append(rs.gets, last)
		if last == "" || rs.getStatus != http.StatusOK {
			status := rs.getStatus
			if last == "" {
				status = http.StatusMethodNotAllowed // no standalone stream
			}
			http.Error(w, "no", status)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		rs.n++
		if rs.closesAlways {
			fmt.Fprintf(w, "id: g%d\nretry: 1\ndata:\n\n", rs.n)
			return
		}
		fmt.Fprintf(w, "id: g%d\nevent: message\ndata: %s\n\n", rs.n, rs.answer(rs.pending))
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &m)
	switch {
	case m.ID == nil:
		w.WriteHeader(http.StatusAccepted)
	case m.Method == "initialize":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"resuming","version":"1"}}}`, m.ID)
	default:
		rs.pending = string(m.ID)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "%s\n\n", rs.prime)
	}
}

func (rs *resumingServer) answer(id string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"late","inputSchema":{"type":"object"}}],"content":[]}}`, id)
}

func (rs *resumingServer) lastEventIDs() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.gets...)
}

func (rs *resumingServer) start(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(rs)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// sessionCall initializes a session with url and returns the answer to a
// tools/call, as the gate would read it.
func sessionCall(t *testing.T, url string) string {
	t.Helper()
	s, err := DialHTTP(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx); err != nil {
		t.Fatal(err)
	}
	s.SetProtocolVersion("2025-06-18")
	if err := s.Write(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"late"}}`)); err != nil {
		t.Fatal(err)
	}
	m, err := s.Read(ctx)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	return string(m)
}

// A server that ends a request's event stream after a priming event and
// sends the answer on the GET that resumes it: the answer arrives, in a
// listing and in a session, and the GET carries the priming event's id.
func TestResumeStreamWithLastEventID(t *testing.T) {
	t.Run("listing", func(t *testing.T) {
		rs := &resumingServer{prime: "id: p1\nretry: 10\ndata:", getStatus: http.StatusOK}
		l, err := HTTP(context.Background(), rs.start(t), nil, Options{Timeout: 30 * time.Second})
		if err != nil || len(l.Tools) != 1 || l.Tools[0].Name != "late" {
			t.Fatalf("listing: %v %+v", err, l)
		}
		if got := rs.lastEventIDs(); len(got) != 1 || got[0] != "p1" {
			t.Fatalf("GETs with Last-Event-ID %q, want [p1]", got)
		}
	})
	t.Run("session", func(t *testing.T) {
		// A priming event named other than "message" counts too.
		rs := &resumingServer{prime: "event: prime\nid: p1\nretry: 10", getStatus: http.StatusOK}
		if a := sessionCall(t, rs.start(t)); !strings.Contains(a, `"late"`) || !strings.Contains(a, `"id":2`) {
			t.Fatalf("answer %s", a)
		}
		if got := rs.lastEventIDs(); len(got) < 1 || got[len(got)-1] != "p1" {
			t.Fatalf("GETs with Last-Event-ID %q, want p1 last", got)
		}
	})
}

// A stream that ends before the answer and cannot be resumed fails the
// request at once, with a message saying why, rather than hanging: no
// event id; an id too long to send back; a server that refuses the GET
// (405); a server that ends every resumed stream too (after maxResumes
// GETs).
func TestResumeFailsClearly(t *testing.T) {
	for _, c := range []struct {
		name string
		rs   *resumingServer
		want string
		gets int
	}{
		{"no id", &resumingServer{prime: "data:", getStatus: http.StatusOK}, "gave no event id", 0},
		{"huge id", &resumingServer{prime: "id: " + strings.Repeat("x", maxEventID+1) + "\ndata:", getStatus: http.StatusOK}, "cannot be sent back", 0},
		{"control id", &resumingServer{prime: "id: a\x01b\ndata:", getStatus: http.StatusOK}, "cannot be sent back", 0},
		{"405", &resumingServer{prime: "id: p1\nretry: 1", getStatus: http.StatusMethodNotAllowed}, "does not resume streams (HTTP 405", 1},
		{"always closes", &resumingServer{prime: "id: p1\nretry: 1", getStatus: http.StatusOK, closesAlways: true}, "giving up", maxResumes},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := HTTP(context.Background(), c.rs.start(t), nil, Options{Timeout: 30 * time.Second})
			wantErr(t, err, errStreamEnded)
			wantErr(t, err, c.want)
			if got := c.rs.lastEventIDs(); len(got) != c.gets {
				t.Fatalf("listing: %d GETs (%q), want %d", len(got), got, c.gets)
			}
			c.rs.gets = nil
			a := sessionCall(t, c.rs.start(t))
			if !strings.Contains(a, `"id":2`) || !strings.Contains(a, `"error"`) || !strings.Contains(a, errStreamEnded) || !strings.Contains(a, c.want) {
				t.Fatalf("session: answer %s, want an error saying %q", a, c.want)
			}
		})
	}
}

// What a server says of its ids and reconnection time is bounded: a
// retry of any size waits at most maxRetry; an id with NUL is ignored; a
// later good id makes a stream resumable again.
func TestEventStreamBounds(t *testing.T) {
	read := func(stream string) *eventStream {
		es := &eventStream{lr: newLineReader(strings.NewReader(stream))}
		for {
			if _, err := es.next(); err != nil {
				return es
			}
		}
	}
	for _, c := range []struct {
		stream string
		delay  time.Duration
	}{
		{"retry: 99999999999999999999999999999999\ndata: x\n\n", maxRetry},
		{"retry: 36000000\n\n", maxRetry},
		{"retry: 250\n\n", 250 * time.Millisecond},
		{"retry: 0\n\n", 0},
		{"retry: -5\n\n", defaultRetry},
		{"retry: 1e9\n\n", defaultRetry},
		{"retry:\n\n", defaultRetry},
		{"data: x\n\n", defaultRetry},
	} {
		if got := read(c.stream).delay(); got != c.delay {
			t.Errorf("%q: delay %v, want %v", c.stream, got, c.delay)
		}
	}
	for _, c := range []struct{ stream, id, unresumable string }{
		{"id: a\n\nid: b\x00c\n\n", "a", ""},
		{"id: " + strings.Repeat("9", maxEventID+1) + "\n\nid: ok\n\n", "ok", ""},
		{"id: ok\n\nid: \u00e9\n\n", "", "cannot be sent back"},
		{"id: ok\n\nid:\n\n", "", "no event id"},
		{"id: ok\ndata: {", "ok", ""}, // the end of the stream ends the event
	} {
		es := read(c.stream)
		if es.lastID != c.id || !strings.Contains(es.unresumable(), c.unresumable) || (c.unresumable == "") != (es.unresumable() == "") {
			t.Errorf("%q: last id %q (%q), want %q (%q)", c.stream, es.lastID, es.unresumable(), c.id, c.unresumable)
		}
	}
}

// The standalone GET stream, when the server ends it, is asked for again
// with the id of its last event.
func TestStandaloneStreamResumed(t *testing.T) {
	var mu sync.Mutex
	var gets []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Mcp-Session-Id", "s-1")
		switch r.Method {
		case http.MethodGet:
			mu.Lock()
			gets = append(gets, r.Header.Get("Last-Event-ID"))
			n := len(gets)
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: g%d\nretry: 5\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":{\"n\":%d}}\n\n", n, n)
		case http.MethodPost:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
		}
	}))
	defer srv.Close()
	s, err := DialHTTP(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)); err != nil {
		t.Fatal(err)
	}
	s.Read(ctx)
	s.SetProtocolVersion("2025-06-18")
	for i := 1; i <= 3; i++ {
		m, err := s.Read(ctx)
		if err != nil || !strings.Contains(string(m), fmt.Sprintf(`"n":%d`, i)) {
			t.Fatalf("notification %d: %s %v", i, m, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if gets[0] != "" || gets[1] != "g1" || gets[2] != "g2" {
		t.Fatalf("GETs with Last-Event-ID %q, want \"\", g1, g2", gets)
	}
}

// A go-sdk server with an event store ends a tool call's stream before
// the answer (CloseSSEStream, as a server behind a proxy would see): the
// answer reaches the session through the resumed stream.
func TestResumeGoSDKServer(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "slow"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 20 * time.Millisecond})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "after the stream ended"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	srv := httptest.NewServer(h)
	defer srv.Close()
	s, err := DialHTTP(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	write := func(m string) {
		t.Helper()
		if err := s.Write(ctx, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`)
	if m, err := s.Read(ctx); err != nil || !strings.Contains(string(m), `"2025-11-25"`) {
		t.Fatalf("initialize: %s %v", m, err)
	}
	s.SetProtocolVersion("2025-11-25")
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	for {
		m, err := s.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(m), `"id":2`) {
			if !strings.Contains(string(m), "after the stream ended") {
				t.Fatalf("answer %s", m)
			}
			return
		}
	}
}
