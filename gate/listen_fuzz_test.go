package gate

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/mcpclient"
)

// What a host sends that picks a stream (Last-Event-ID, a request's
// progress token, a progress notification's) never panics, and never
// names a stream of another session: only the session's own streams are
// looked up, by the id an event of ours carries.
func FuzzListenStreamIDs(f *testing.F) {
	for _, s := range []struct{ id, params string }{
		{"ABC_1", `{"_meta":{"progressToken":"p"}}`},
		{"ABC_0", `{"_meta":{"progressToken":1.0},"progressToken":1}`},
		{"_1", `{"progressToken":-1e400}`},
		{"A_B_1", `{"_meta":{"progressToken":{"x":1}}}`},
		{"A_99999999999999999999", `{"_meta":null}`},
		{"A_-1", `[]`},
		{"A_+1", `{"_meta":{"progressToken":"\u0000"}}`},
	} {
		f.Add(s.id, []byte(s.params))
	}
	f.Fuzz(func(t *testing.T, id string, params []byte) {
		srv := &HTTPServer{opts: HTTPOptions{IdleTimeout: DefaultIdleTimeout}}
		s := newHTTPSession(srv, "session", 1)
		defer s.end("")
		other := newHTTPSession(srv, "other", 2)
		defer other.end("")
		if stream, n, ok := parseEventID(id); ok {
			if n < 0 || stream == "" || len(id) < len(stream)+2 || id[:len(stream)+1] != stream+"_" || strconv.Itoa(n) == "" {
				t.Fatalf("parseEventID(%q) = %q %d", id, stream, n)
			}
			if stream == other.standalone.id && s.streams[stream] != nil {
				t.Fatal("a stream of another session")
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if tok := progressTokenKey(params, "_meta"); tok != "" {
			st := s.newStream("n:1", true)
			s.pending["n:1"] = st
			s.progress[tok] = st
		}
		if m, err := mcpclient.Decode(mcpclient.EncodeRequest(nil, "notifications/progress", params)); err == nil {
			if st := s.routeLocked(m); st == nil || (st != s.standalone && s.pending[st.key] != st) {
				t.Fatal("routed to no stream of the session")
			}
		}
	})
}

// BenchmarkListenCall measures a request's round trip through the
// --listen endpoint to a session that answers at once (no gate, no
// server: the cost of the HTTP side), answered as application/json and
// as an event stream.
func BenchmarkListenCall(b *testing.B) {
	for _, accept := range []string{"application/json", "application/json, text/event-stream"} {
		name := "json"
		if accept != "application/json" {
			name = "sse"
		}
		b.Run(name, func(b *testing.B) {
			h, err := ListenHTTP("127.0.0.1:0", HTTPOptions{serve: func(ctx context.Context, host guard.Conn) error {
				for {
					data, err := host.Read(ctx)
					if err != nil {
						return nil
					}
					if m, err := mcpclient.Decode(data); err == nil && m.Request && m.ID != nil {
						host.Write(ctx, mcpclient.EncodeResult(m.ID, []byte(`{"content":[{"type":"text","text":"sunny"}]}`)))
					}
				}
			}})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			do := func(id int, sid string) *http.Response {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Berlin"}}}`, id)
				if id == 0 {
					body = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`
				}
				req, _ := http.NewRequest(http.MethodPost, h.URL(), strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", accept)
				if sid != "" {
					req.Header.Set("Mcp-Session-Id", sid)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				return resp
			}
			sid := do(0, "").Header.Get("Mcp-Session-Id")
			b.ResetTimer()
			for i := range b.N {
				if resp := do(i+1, sid); resp.StatusCode != http.StatusOK {
					b.Fatalf("HTTP %d", resp.StatusCode)
				}
			}
		})
	}
}
