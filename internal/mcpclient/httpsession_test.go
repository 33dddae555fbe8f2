package mcpclient

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// sessionAnswer writes msg to a new session with url and returns what
// Read returns next.
func sessionAnswer(t *testing.T, url, msg string) (string, error) {
	t.Helper()
	s, err := DialHTTP(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Write(ctx, []byte(msg)); err != nil {
		return "", err
	}
	m, err := s.Read(ctx)
	return string(m), err
}

// A request that cannot reach the server is answered with an error that
// does not quote the URL, whose query may hold a token.
func TestSessionErrorHidesURL(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	a, err := sessionAnswer(t, url+"/mcp?token=s3cr3t-token", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a, `"error"`) || strings.Contains(a, "s3cr3t-token") {
		t.Fatalf("answer %s: want an error without the URL's token", a)
	}
}

// A JSON answer longer than MaxMessage is not handed on: the request is
// answered with an error naming the bound.
func TestSessionJSONAnswerBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{"x":"`)
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range MaxMessage>>20 + 1 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		fmt.Fprint(w, `"}}`)
	}))
	defer srv.Close()
	a, err := sessionAnswer(t, srv.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) > 4096 || !strings.Contains(a, ErrMessageTooLarge.Error()) {
		t.Fatalf("answer of %d bytes %.200s: want the bound's error", len(a), a)
	}
}

// A server that forgets the session (404 for its id) ends it: Read says
// so, and Write no longer posts.
func TestSessionForgotten(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Session-Id") != "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Mcp-Session-Id", "s-1")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer srv.Close()
	s, err := DialHTTP(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if _, err := s.Read(ctx); err != nil {
		t.Fatal(err)
	}
	s.Write(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	if _, err := s.Read(ctx); err == nil || !strings.Contains(err.Error(), "ended the session") {
		t.Fatalf("Read after a 404: %v", err)
	}
	if err := s.Write(ctx, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)); err == nil {
		t.Fatal("Write after the server ended the session succeeded")
	}
}

// An event longer than MaxMessage on a request's stream is not read
// whole: the request is answered with an error naming the bound.
func TestSessionEventBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: 1\ndata: ")
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range MaxMessage>>20 + 1 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		fmt.Fprint(w, "\n\n")
	}))
	defer srv.Close()
	a, err := sessionAnswer(t, srv.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) > 4096 || !strings.Contains(a, ErrMessageTooLarge.Error()) {
		t.Fatalf("answer of %d bytes %.200s: want the bound's error", len(a), a)
	}
}

// A session id that is not visible ASCII is not taken: later requests do
// not send it back.
func TestSessionIDNotVisibleASCII(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, r.Header.Get("Mcp-Session-Id"))
		mu.Unlock()
		w.Header().Set("Mcp-Session-Id", "s\u00e9ssion 1")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer srv.Close()
	if _, err := sessionAnswer(t, srv.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range sent {
		if s != "" {
			t.Fatalf("requests sent session ids %q", sent)
		}
	}
}
