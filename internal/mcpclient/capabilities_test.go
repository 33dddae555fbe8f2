package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// askingServer is an in-memory server that, asked for tools/list, first
// sends the client each of asks as a request and waits for every answer;
// it offers get-roots-list only to a client that declared roots, as
// server-everything does.
type askingServer struct {
	toServer, toClient chan []byte
	asks               []string
	// declared is the capabilities object of the client's initialize;
	// answers the client's answer to each ask, by method.
	declared json.RawMessage
	answers  map[string]string
}

func newAskingServer(asks ...string) *askingServer {
	s := &askingServer{toServer: make(chan []byte, 16), toClient: make(chan []byte, 16), asks: asks, answers: map[string]string{}}
	go s.serve()
	return s
}

func (s *askingServer) Read(ctx context.Context) ([]byte, error) {
	select {
	case m := <-s.toClient:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *askingServer) Write(ctx context.Context, msg []byte) error {
	select {
	case s.toServer <- append([]byte{}, msg...):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *askingServer) Close() error { return nil }

func (s *askingServer) serve() {
	for data := range s.toServer {
		m, err := Decode(data)
		if err != nil || !m.Request || m.ID == nil {
			continue
		}
		switch m.Method {
		case "initialize":
			s.declared = Member(m.Params, "capabilities")
			s.toClient <- EncodeResult(m.ID, []byte(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"asking"}}`))
		case "tools/list":
			for i, method := range s.asks {
				id := []byte(`"ask-` + string(rune('a'+i)) + `"`)
				s.toClient <- EncodeRequest(id, method, []byte(`{}`))
				var answer *Message
				for answer == nil {
					a, err := Decode(<-s.toServer)
					if err == nil && !a.Request && string(a.ID) == string(id) {
						answer = a
					}
				}
				if answer.Error {
					s.answers[method] = "error " + answer.ErrCode + " " + answer.ErrMsg
				} else {
					s.answers[method] = string(answer.Result)
				}
			}
			tools := `{"name":"echo","inputSchema":{"type":"object"}}`
			if Member(s.declared, "roots") != nil {
				tools += `,{"name":"get-roots-list","inputSchema":{"type":"object"}}`
			}
			s.toClient <- EncodeResult(m.ID, []byte(`{"tools":[`+tools+`]}`))
		}
	}
}

func toolNames(l *Listing) []string {
	var out []string
	for _, t := range l.Tools {
		out = append(out, t.Name)
	}
	return out
}

// A listing that declares capabilities is offered what a host with them
// is offered, and answers the server's requests during it: no roots, and
// an error for sampling and elicitation, so a server that waits for the
// answers before it lists is never left hanging.
func TestListDeclaresCapabilities(t *testing.T) {
	asks := []string{"roots/list", "sampling/createMessage", "elicitation/create", "ping"}
	caps, err := ParseCapabilities("roots,sampling,elicitation")
	if err != nil {
		t.Fatal(err)
	}
	s := newAskingServer(asks...)
	l, err := ListSession(context.Background(), s, Options{Capabilities: caps, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if string(s.declared) != `{"roots":{},"sampling":{},"elicitation":{}}` {
		t.Errorf("declared %s", s.declared)
	}
	if got := strings.Join(toolNames(l), " "); got != "echo get-roots-list" {
		t.Errorf("tools %s", got)
	}
	want := map[string]string{
		"roots/list":             `{"roots":[]}`,
		"sampling/createMessage": "error -1 etdi does not sample during a check",
		"elicitation/create":     "error -1 etdi does not ask the person during a check",
		"ping":                   `{}`,
	}
	for m, w := range want {
		if !strings.HasPrefix(s.answers[m], w) {
			t.Errorf("%s answered %q, want %q", m, s.answers[m], w)
		}
	}
}

// Without capabilities (the default, and --capabilities none) nothing is
// declared: the server offers less, and its requests for capabilities
// that were not declared are refused (-32601), still without hanging.
func TestListWithoutCapabilities(t *testing.T) {
	for _, caps := range []json.RawMessage{nil, mustCaps(t, "none")} {
		s := newAskingServer("roots/list", "sampling/createMessage", "elicitation/create")
		l, err := ListSession(context.Background(), s, Options{Capabilities: caps, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if string(s.declared) != `{}` || strings.Join(toolNames(l), " ") != "echo" {
			t.Errorf("declared %s, tools %v", s.declared, toolNames(l))
		}
		for _, m := range []string{"roots/list", "sampling/createMessage", "elicitation/create"} {
			if !strings.HasPrefix(s.answers[m], "error -32601 ") {
				t.Errorf("%s answered %q", m, s.answers[m])
			}
		}
	}
	// Only what is declared is answered as declared.
	s := newAskingServer("roots/list", "sampling/createMessage")
	if _, err := ListSession(context.Background(), s, Options{Capabilities: mustCaps(t, "sampling"), Timeout: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.answers["roots/list"], "error -32601 ") || !strings.HasPrefix(s.answers["sampling/createMessage"], "error -1 ") {
		t.Errorf("answers %v", s.answers)
	}
}

func mustCaps(t *testing.T, list string) json.RawMessage {
	t.Helper()
	c, err := ParseCapabilities(list)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseCapabilities(t *testing.T) {
	for in, want := range map[string]string{
		"roots":                      `{"roots":{}}`,
		"elicitation,roots":          `{"roots":{},"elicitation":{}}`,
		" sampling , elicitation":    `{"sampling":{},"elicitation":{}}`,
		"elicitation,sampling,roots": `{"roots":{},"sampling":{},"elicitation":{}}`,
		"none":                       `{}`,
		"  none  ":                   `{}`,
	} {
		got, err := ParseCapabilities(in)
		if err != nil || string(got) != want {
			t.Errorf("%q: %s, %v; want %s", in, got, err, want)
		}
		if ValidCapabilities(got) != nil {
			t.Errorf("%q: not valid", in)
		}
	}
	for in, want := range map[string]string{"": "an empty name", "root": "unknown capability", "Roots": "unknown capability",
		"roots,": "an empty name", "roots,roots": "given twice", "none,roots": "none cannot be combined", "tools": "unknown capability",
		"roots;sampling": "unknown capability", "experimental": "unknown capability"} {
		if c, err := ParseCapabilities(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %s, %v; want an error saying %q", in, c, err, want)
		}
	}
}

// A capabilities object given by a Go host is checked before it is
// declared: an object of objects, no member twice, bounded.
func TestValidCapabilities(t *testing.T) {
	for _, bad := range []string{`[]`, `"roots"`, `{"roots":true}`, `{"roots":{},"roots":{}}`, `{`, `{"x":{}}` + " x",
		`{"experimental":{"` + strings.Repeat("x", MaxCapabilities) + `":{}}}`} {
		if ValidCapabilities([]byte(bad)) == nil {
			t.Errorf("%.60s accepted", bad)
		}
		s := newAskingServer()
		_, err := ListSession(context.Background(), s, Options{Capabilities: json.RawMessage(bad), Timeout: 5 * time.Second})
		var se *ServerError
		if !errors.As(err, &se) || se.Stage != "initialize" || s.declared != nil {
			t.Errorf("%.60s: listed (%v)", bad, err)
		}
	}
	for _, good := range []string{`{}`, `{"roots":{"listChanged":true}}`, `{"roots":{},"elicitation":{"form":{},"url":{}},"experimental":{}}`} {
		if err := ValidCapabilities([]byte(good)); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
}
