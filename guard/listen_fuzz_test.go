package guard

import (
	"strconv"
	"testing"

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
