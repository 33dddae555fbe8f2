package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
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
// never returns more data than was read, and stops at the budget; the id
// it would send back to resume the stream is short visible ASCII, and
// the wait before it at most maxRetry.
func FuzzNextEvent(f *testing.F) {
	f.Add([]byte("event: message\nid: 1\ndata: {\"a\":1}\n\n"), 100)
	f.Add([]byte(": ping\n\ndata: a\ndata: b\r\n\r\nevent: other\ndata: x\n\ndata:c"), 20)
	f.Add([]byte("data: "+strings.Repeat("x", 300)+"\n\n"), 64)
	f.Add([]byte("event: prime\nid: s_1\nretry: 500\ndata:\n\nid: s_2\nretry: 99999999999999999999\ndata: {}\n\nid: \x00\n\nid: \xff\n\n"), 200)
	f.Fuzz(func(t *testing.T, stream []byte, limit int) {
		if limit < 0 || limit > 1<<20 {
			return
		}
		b := newBudget(int64(limit))
		es := &eventStream{lr: newLineReader(b.reader(bytes.NewReader(stream)))}
		defer func() {
			if len(es.lastID) > maxEventID || !visibleASCII(es.lastID) || (es.badID && es.lastID != "") {
				t.Fatalf("last event id %q (bad %v)", es.lastID, es.badID)
			}
			if d := es.delay(); d < 0 || d > maxRetry {
				t.Fatalf("reconnection time %v", d)
			}
		}()
		total := 0
		for i := 0; i < len(stream)+1; i++ {
			data, err := es.next()
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

// FuzzMessageEdits: on any object a decoded message may hold, the edits
// the gate makes keep the rest as it was: Member finds what encoding/json
// finds, WithoutMember removes exactly that member, and KeepElements keeps
// exactly the elements asked for, each byte for byte, in a valid document.
func FuzzMessageEdits(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"a"},{"name":"b","d":"]"},3,[]],"nextCursor":"x","_meta":{}}`), "tools", uint64(5))
	f.Add([]byte(` { "instructions" : "x}" , "a" : [ 1 , { } ] } `), "instructions", uint64(1))
	f.Add([]byte(`{"\u0074ools":[1,2,3]}`), "tools", uint64(2))
	f.Add([]byte(`{"tools":[]}`), "tools", uint64(0))
	f.Fuzz(func(t *testing.T, obj []byte, name string, mask uint64) {
		var m map[string]json.RawMessage
		if !json.Valid(obj) || json.Unmarshal(obj, &m) != nil || m == nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(obj))
		if keys := countKeys(dec); keys != len(m) {
			return // duplicate names: Decode refuses those in an envelope; inside one, Member takes the first
		}
		want, has := m[name]
		got := Member(obj, name)
		if has != (got != nil) || (has && !jsonEqual(want, got)) {
			t.Fatalf("Member(%q) = %q, encoding/json %q", name, got, want)
		}
		without := WithoutMember(obj, name)
		var w map[string]json.RawMessage
		if err := json.Unmarshal(without, &w); err != nil {
			t.Fatalf("WithoutMember made %q invalid: %v", without, err)
		}
		if _, still := w[name]; still || len(w) != len(m)-map[bool]int{true: 1, false: 0}[has] {
			t.Fatalf("WithoutMember(%q): %q", name, without)
		}
		var arr []json.RawMessage
		if !has || json.Unmarshal(want, &arr) != nil {
			return
		}
		kept, err := KeepElements(obj, name, func(i int) bool { return mask&(1<<(i%64)) != 0 })
		if err != nil {
			t.Fatalf("KeepElements: %v", err)
		}
		var k map[string]json.RawMessage
		var karr []json.RawMessage
		if json.Unmarshal(kept, &k) != nil || json.Unmarshal(k[name], &karr) != nil {
			t.Fatalf("KeepElements made %q invalid", kept)
		}
		var wantArr []json.RawMessage
		for i, e := range arr {
			if mask&(1<<(i%64)) != 0 {
				wantArr = append(wantArr, e)
			}
		}
		if len(karr) != len(wantArr) {
			t.Fatalf("KeepElements kept %d of %d, want %d: %q", len(karr), len(arr), len(wantArr), kept)
		}
		for i := range karr {
			if !bytes.Equal(bytes.TrimSpace(karr[i]), bytes.TrimSpace(wantArr[i])) {
				t.Fatalf("element %d changed: %q, was %q", i, karr[i], wantArr[i])
			}
		}
	})
}

// countKeys counts the names of the top-level object read by dec.
func countKeys(dec *json.Decoder) int {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return -1
	}
	n := 0
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			return -1
		}
		n++
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return -1
		}
	}
	return n
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
