package mcpclient

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
)

// scriptedSession is an in-memory server whose answers a function writes:
// for each request of the client, the raw messages it sends back.
type scriptedSession struct {
	toClient chan []byte
	answer   func(m *Message) []string
}

func newScripted(answer func(m *Message) []string) *scriptedSession {
	return &scriptedSession{toClient: make(chan []byte, 64), answer: answer}
}

func (s *scriptedSession) Read(ctx context.Context) ([]byte, error) {
	select {
	case m := <-s.toClient:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *scriptedSession) Write(_ context.Context, msg []byte) error {
	m, err := Decode(msg)
	if err != nil || !m.Request || m.ID == nil {
		return nil
	}
	for _, out := range s.answer(m) {
		s.toClient <- []byte(out)
	}
	return nil
}

func (s *scriptedSession) Close() error { return nil }

// scriptedList lists a scripted server that answers initialize plainly
// and tools/list with what tools returns.
func scriptedList(t *testing.T, tools func(m *Message) []string) (*Listing, error) {
	t.Helper()
	s := newScripted(func(m *Message) []string {
		if m.Method == "initialize" {
			return []string{string(EncodeResult(m.ID, []byte(`{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s"}}`)))}
		}
		return tools(m)
	})
	return ListSession(context.Background(), s, Options{Timeout: 10 * time.Second})
}

const oneTool = `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`

// An answer is the response with the request's id: a response to another
// id (one the server makes up, with other tools) is not taken for it.
func TestAnswerIsTheOneWithTheID(t *testing.T) {
	l, err := scriptedList(t, func(m *Message) []string {
		return []string{
			string(EncodeResult([]byte(`9999`), []byte(`{"tools":[{"name":"poisoned","inputSchema":{"type":"object"}}]}`))),
			string(EncodeResult([]byte(`"`+string(m.ID)+`"`), []byte(`{"tools":[{"name":"poisoned","inputSchema":{"type":"object"}}]}`))),
			string(EncodeResult(m.ID, []byte(oneTool))),
		}
	})
	if err != nil || len(l.Tools) != 1 || l.Tools[0].Name != "echo" {
		t.Fatalf("listing %v, %v", l, err)
	}
}

// An error answer is an error naming the method, never an empty result.
func TestErrorAnswerIsAnError(t *testing.T) {
	_, err := scriptedList(t, func(m *Message) []string {
		return []string{string(EncodeError(m.ID, -32603, "boom", nil))}
	})
	wantErr(t, err, "the server answered tools/list with an error: -32603 boom")
}

// A nextCursor that is not a string ends the listing with an error.
func TestNextCursorKind(t *testing.T) {
	for _, cursor := range []string{`1`, `{}`, `true`, `["a"]`} {
		_, err := scriptedList(t, func(m *Message) []string {
			return []string{string(EncodeResult(m.ID, []byte(`{"tools":[],"nextCursor":`+cursor+`}`)))}
		})
		wantErr(t, err, "nextCursor is a")
	}
}

// The results of every list of one listing count against MaxFetchBytes,
// whatever the connection counts: a session bounds a message, not a
// listing.
func TestListListsByteBudget(t *testing.T) {
	big := `{"tools":[{"name":"t","description":"` + strings.Repeat("x", MaxFetchBytes/4) + `","inputSchema":{"type":"object"}}],"nextCursor":"%d"}`
	page := 0
	call := func(ctx context.Context, method string, params json.RawMessage) ([]byte, error) {
		page++
		return []byte(strings.Replace(big, "%d", strings.Repeat("n", page), 1)), nil
	}
	err := ListLists(context.Background(), call, []etdi.List{etdi.ListTools}, &Listing{}, 200)
	if err == nil || !strings.Contains(err.Error(), ErrTooLarge.Error()) || page > 5 {
		t.Fatalf("after %d pages of %d MiB: %v", page, MaxFetchBytes/4>>20, err)
	}
}

// Instructions that are not a string are refused: the gate compares them
// with the approved text and a host shows them.
func TestInitializeInstructionsKind(t *testing.T) {
	for _, in := range []string{`5`, `null`, `{"text":"x"}`, `["x"]`} {
		_, err := ParseInitialize([]byte(`{"protocolVersion":"2025-06-18","capabilities":{},"instructions":` + in + `}`))
		wantErr(t, err, "instructions is a")
	}
	l, err := ParseInitialize([]byte(`{"protocolVersion":"2025-06-18","capabilities":{},"instructions":"Use x."}`))
	if err != nil || l.Instructions == nil || *l.Instructions != "Use x." {
		t.Fatalf("%+v %v", l, err)
	}
}
