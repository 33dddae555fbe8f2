package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzParseInitialize: whatever a server answers to initialize, parsing
// never panics, and an accepted answer has a protocol version.
func FuzzParseInitialize(f *testing.F) {
	f.Add([]byte(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"},"instructions":"use it"}`))
	f.Add([]byte(`{"protocolVersion":"2025-06-18","instructions":7}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var l Listing
		if err := parseInitialize(data, &l); err != nil {
			return
		}
		if l.ProtocolVersion == "" {
			t.Fatalf("accepted an initialize result without protocolVersion: %q", data)
		}
	})
}

// FuzzDecodeMessage: whatever a server sends as a message, decoding never
// panics, and an accepted message reads as encoding/json reads it: the
// same result bytes, the same method, the same id.
func FuzzDecodeMessage(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a\"b","method":"roots/list","params":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/message"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{},"result":{"tools":[{"name":"x"}]}}`))
	f.Add([]byte(` { "jsonrpc" : "2.0" , "\u0069d" : 1.0 , "result" : [ "}" , "\\" ] } `))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeMessage(data)
		if err != nil {
			return
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(data, &raw); err != nil {
			t.Fatalf("accepted what encoding/json rejects: %v", err)
		}
		if r, ok := raw["result"]; ok != (m.result != nil) || !bytes.Equal(r, m.result) {
			t.Fatalf("result %q, encoding/json reads %q", m.result, r)
		}
		if m.isRequest {
			var method string
			if json.Unmarshal(raw["method"], &method) != nil || method != m.method {
				t.Fatalf("method %q, encoding/json reads %s", m.method, raw["method"])
			}
		}
		if m.id != nil && !bytes.Equal(m.id, raw["id"]) {
			t.Fatalf("id %q, encoding/json reads %q", m.id, raw["id"])
		}
	})
}

// FuzzNextEvent: whatever an event stream holds, reading it never panics,
// never returns more data than was read, and stops at the budget.
func FuzzNextEvent(f *testing.F) {
	f.Add([]byte("event: message\nid: 1\ndata: {\"a\":1}\n\n"), 100)
	f.Add([]byte(": ping\n\ndata: a\ndata: b\r\n\r\nevent: other\ndata: x\n\ndata:c"), 20)
	f.Add([]byte("data: "+strings.Repeat("x", 300)+"\n\n"), 64)
	f.Fuzz(func(t *testing.T, stream []byte, limit int) {
		if limit < 0 || limit > 1<<20 {
			return
		}
		b := newBudget(int64(limit))
		lr := newLineReader(b.reader(bytes.NewReader(stream)))
		total := 0
		for i := 0; i < len(stream)+1; i++ {
			data, err := nextEvent(lr)
			if err != nil {
				if len(stream) <= limit && !errors.Is(err, io.EOF) {
					t.Fatalf("within the budget, error %v", err)
				}
				return
			}
			total += len(data)
			if total > len(stream) || total > limit {
				t.Fatalf("%d bytes of data from %d bytes read (budget %d)", total, len(stream), limit)
			}
		}
	})
}
