package mcpclient

import (
	"strings"
	"testing"
)

func TestDecodeMessage(t *testing.T) {
	for _, tc := range []struct {
		in, err string
	}{
		// Two results: a host keeping the first and etdi the last would see
		// different tools.
		{`{"jsonrpc":"2.0","id":1,"result":{"tools":[]},"result":{"tools":[{"name":"x"}]}}`, `duplicate member name "result"`},
		{`{"jsonrpc":"2.0","id":1,"result":{},"\u0072esult":{}}`, `duplicate member name "result"`},
		// A peer that matches names case-insensitively reads the other one.
		{`{"jsonrpc":"2.0","id":1,"result":{},"Result":{"tools":[{"name":"x"}]}}`, `member "Result" of the message differs from "result" only in case`},
		{`{"jsonrpc":"2.0","ID":2,"id":1,"result":{}}`, `member "ID" of the message differs from "id" only in case`},
		{`{"id":1,"result":{}}`, `lacks "jsonrpc": "2.0"`},
		{`{"jsonrpc":"1.0","id":1,"result":{}}`, `lacks "jsonrpc": "2.0"`},
		{`{"jsonrpc":"2.0","id":true,"result":{}}`, "id is not a number or a string"},
		{`{"jsonrpc":"2.0","id":1,"method":"x","result":{}}`, "both a request and a response"},
		{`{"jsonrpc":"2.0","result":{}}`, "has no id"},
		{`{"jsonrpc":"2.0","id":1}`, "exactly one of result and error"},
		{`{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, "exactly one of result and error"},
		{`[{"jsonrpc":"2.0","id":1,"result":{}}]`, "not a JSON object"},
		{`{"jsonrpc":"2.0","id":1,"result":{}`, "unexpected end of JSON input"},
	} {
		if _, err := decodeMessage([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.err)
		}
	}
	// Accepted, as sent.
	m, err := decodeMessage([]byte(` {"result" : {"tools":[ "}" ]} , "id":1.0,"jsonrpc":"2.0", "extra":[1,{"a":"\""}]} `))
	if err != nil || string(m.result) != `{"tools":[ "}" ]}` || !m.isID(1) || m.isID(2) || m.isRequest {
		t.Fatalf("%+v %v", m, err)
	}
	m, err = decodeMessage([]byte(`{"jsonrpc":"2.0","id":"1","method":"roots/list"}`))
	if err != nil || !m.isRequest || m.isID(1) || string(m.id) != `"1"` || m.method != "roots/list" {
		t.Fatalf("%+v %v", m, err)
	}
	m, err = decodeMessage([]byte(`{"jsonrpc":"2.0","id":3,"error":{"code":-32601.0,"message":"no such method"}}`))
	if err != nil || !m.hasError || m.errCode != "-32601.0" || m.errMsg != "no such method" {
		t.Fatalf("%+v %v", m, err)
	}
	if got := string(encodeRefusal([]byte(`"a"`), "sampling/createMessage")); got != `{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"etdi does not serve sampling/createMessage"}}` {
		t.Fatalf("refusal %s", got)
	}
}

func TestMessageEdits(t *testing.T) {
	obj := []byte(`{ "protocolVersion":"2025-06-18", "instructions" : "Use \"x\"}", "serverInfo":{"name":"s"} }`)
	if got := string(WithoutMember(obj, "instructions")); got != `{ "protocolVersion":"2025-06-18", "serverInfo":{"name":"s"} }` {
		t.Errorf("middle member: %s", got)
	}
	if got := string(WithoutMember([]byte(`{"instructions":"x"}`), "instructions")); got != `{}` {
		t.Errorf("only member: %s", got)
	}
	if got := string(WithoutMember([]byte(`{"a":1,"instructions":"x"}`), "instructions")); got != `{"a":1}` {
		t.Errorf("last member: %s", got)
	}
	if got := string(WithoutMember(obj, "none")); got != string(obj) {
		t.Errorf("no such member: %s", got)
	}
	page := []byte(`{"tools": [ {"name":"a","d":"]"} , {"name":"b"},{"name":"c"} ], "nextCursor":"2","_meta":{"k":[1]}}`)
	got, err := KeepElements(page, "tools", func(i int) bool { return i != 1 })
	if err != nil || string(got) != `{"tools": [{"name":"a","d":"]"},{"name":"c"}], "nextCursor":"2","_meta":{"k":[1]}}` {
		t.Errorf("keep 0 and 2: %s %v", got, err)
	}
	got, err = KeepElements(page, "tools", func(int) bool { return false })
	if err != nil || string(got) != `{"tools": [], "nextCursor":"2","_meta":{"k":[1]}}` {
		t.Errorf("keep none: %s %v", got, err)
	}
	if _, err := KeepElements(page, "nextCursor", func(int) bool { return true }); err == nil {
		t.Error("a string is not an array")
	}
	if string(Member(page, "nextCursor")) != `"2"` || Member(page, "x") != nil {
		t.Error("Member")
	}
	for _, tc := range [][2]string{{"1", "1.0"}, {"1", "1e0"}, {`"a"`, `"\u0061"`}} {
		if IDKey([]byte(tc[0])) != IDKey([]byte(tc[1])) {
			t.Errorf("ids %s and %s differ", tc[0], tc[1])
		}
	}
	if IDKey([]byte("1")) == IDKey([]byte(`"1"`)) {
		t.Error("a number and a string are different ids")
	}
}

// A message with line breaks between its tokens (an SSE event of several
// data lines) is written to a stdio peer as one line, meaning the same.
func TestOneLine(t *testing.T) {
	in := "{\"jsonrpc\":\"2.0\",\r\n\"method\":\"notifications/message\",\n\"params\":{\"data\":\"a\\nb\"}}"
	got, err := oneLine([]byte(in))
	if err != nil || strings.ContainsAny(string(got), "\r\n") || string(got) != `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"a\nb"}}` {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := oneLine([]byte("{\"a\":\n")); err == nil {
		t.Fatal("an invalid message with a line break was written")
	}
	var b strings.Builder
	c := NewStreamConn(strings.NewReader(""), &b, nil)
	c.Write(t.Context(), []byte(in))
	if strings.Count(b.String(), "\n") != 1 {
		t.Fatalf("written as %q", b.String())
	}
}
