package guard

import (
	"bytes"
	"context"
	"testing"

	"github.com/etdi-dev/etdi/pin"
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

// Check compares every list of a listing, not only its tools: a prompt,
// a resource and a resource template of an unsigned server are each
// observed, and new.
func TestCheckObservesEveryList(t *testing.T) {
	l, err := ReadListing([]byte(`{"tools":[` + atkTool + `],` +
		`"prompts":[{"name":"weather_report","description":"A report."}],` +
		`"resources":[{"uri":"file:///forecast.txt","name":"forecast"}],` +
		`"resourceTemplates":[{"uriTemplate":"file:///{city}.txt","name":"city"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(context.Background(), l, weatherOptions(t))
	if err != nil || r.Blocked() {
		t.Fatalf("check: %v %+v", err, r)
	}
	got := map[string]string{}
	for _, st := range r.Tools {
		got[pin.ItemRef(st.Item, st.Name)] = string(st.Status)
	}
	for _, ref := range []string{"get_weather", pin.ItemRef(pin.ItemPrompt, "weather_report"),
		pin.ItemRef(pin.ItemResource, "file:///forecast.txt"), pin.ItemRef(pin.ItemTemplate, "file:///{city}.txt")} {
		if got[ref] != "new" {
			t.Errorf("%s: %q (all: %v)", ref, got[ref], got)
		}
	}
}
