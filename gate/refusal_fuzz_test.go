package gate

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/mcpclient"
)

// scriptConn is a host that sends msgs, one per Read, then ends; what
// etdi writes is kept.
type scriptConn struct {
	msgs    [][]byte
	written [][]byte
}

func (c *scriptConn) Read(context.Context) ([]byte, error) {
	if len(c.msgs) == 0 {
		return nil, io.EOF
	}
	m := c.msgs[0]
	c.msgs = c.msgs[1:]
	return m, nil
}

func (c *scriptConn) Write(_ context.Context, m []byte) error {
	c.written = append(c.written, append([]byte(nil), m...))
	return nil
}

func (c *scriptConn) Close() error { return nil }

// FuzzServeRefusal: whatever a host sends, a refusal session ends when
// the host does, writes only valid messages, answers every request with
// an id, and never names a tool or offers one.
func FuzzServeRefusal(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"c"}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"},"method":"x"}`,
		"\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var msgs [][]byte
		for _, line := range strings.Split(in, "\n") {
			msgs = append(msgs, []byte(line))
		}
		c := &scriptConn{msgs: msgs}
		if err := ServeRefusal(context.Background(), c, testRefusal(), nil); err != nil {
			t.Fatalf("the host ended the session: %v", err)
		}
		requests := 0
		for _, m := range msgs {
			if d, err := mcpclient.Decode(m); err == nil && d.Request && d.ID != nil {
				requests++
			}
		}
		answers := 0
		for _, w := range c.written {
			d, err := mcpclient.Decode(w)
			if err != nil {
				if !strings.Contains(string(w), `"id":null,"error":{"code":-32700`) {
					t.Fatalf("wrote %q: %v", w, err)
				}
				continue
			}
			if !d.Request {
				answers++
			}
			if strings.Contains(string(d.Result), `"name":`) && !strings.Contains(string(d.Result), `"serverInfo"`) {
				t.Fatalf("offered something: %s", w)
			}
		}
		if answers != requests {
			t.Fatalf("%d requests, %d answers", requests, answers)
		}
	})
}
