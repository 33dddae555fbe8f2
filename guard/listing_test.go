package guard

import (
	"bytes"
	"testing"
)

// A saved listing carries the server's instructions as the gate and etdi
// fetch write them: a string, null when the server sent none, or nothing
// when they are not known; they read back as they were.
// atkTool is a tool of an unsigned test server.
const atkTool = `{"name":"get_weather","description":"Get the weather.","inputSchema":{"type":"object","properties":{"city":{"type":"string"}}}}`

func TestListingInstructions(t *testing.T) {
	instr := "Use get_weather. <b>bold</b>"
	tool := `{"tools":[` + atkTool + `]}`
	for _, l := range []*Listing{{Live: true, Instructions: &instr}, {Live: true}, {}} {
		src, err := ReadListing([]byte(tool))
		if err != nil {
			t.Fatal(err)
		}
		l.Tools = src.Tools
		write, err := l.Saver()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		got, err := ReadListing(b.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", b.String(), err)
		}
		if got.Live != l.Live || (got.Instructions == nil) != (l.Instructions == nil) || got.Instructions != nil && *got.Instructions != instr {
			t.Fatalf("%s read back as live %v, instructions %v", b.String(), got.Live, got.Instructions)
		}
	}
	if _, err := ReadListing([]byte(`{"tools":[],"instructions":7}`)); err == nil {
		t.Fatal("instructions that are not a string were read")
	}
	// A saved JSON-RPC response holds its listing under result: a member
	// beside it is not the server's.
	l, err := ReadListing([]byte(`{"jsonrpc":"2.0","id":1,"result":` + tool + `,"instructions":"x"}`))
	if err != nil || l.Live {
		t.Fatalf("instructions beside a response's result: %v %+v", err, l)
	}
}
