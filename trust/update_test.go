package trust

import (
	"strings"
	"testing"
)

// The unsigned rule reads as the string it always was, or as an object
// that adds the update rule; anything else is refused, and the policy
// writes back what it read.
func TestUnsignedUpdateRule(t *testing.T) {
	for doc, want := range map[string][2]string{
		`{"version":1,"unsigned":"warn","providers":[]}`:                              {"warn", "ask"},
		`{"version":1,"providers":[]}`:                                                {"block", "ask"},
		`{"version":1,"unsigned":{"rule":"warn","onUpdate":"allow"},"providers":[]}`:  {"warn", "allow"},
		`{"version":1,"unsigned":{"rule":"allow","onUpdate":"block"},"providers":[]}`: {"allow", "block"},
		`{"version":1,"unsigned":{"rule":"warn"},"providers":[]}`:                     {"warn", "ask"},
		`{"version":1,"unsigned":{"rule":"warn","onUpdate":"ask"},"providers":[]}`:    {"warn", "ask"},
	} {
		p, err := Parse([]byte(doc))
		if err != nil || string(p.Unsigned) != want[0] || string(p.OnUpdate()) != want[1] {
			t.Fatalf("%s: %v %+v", doc, err, p)
		}
		data, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(data)
		if err != nil || again.Unsigned != p.Unsigned || again.OnUpdate() != p.OnUpdate() {
			t.Fatalf("%s written as %s: %v", doc, data, err)
		}
		if p.UnsignedUpdate == "" && !strings.Contains(string(data), `"unsigned": "`+want[0]+`"`) {
			t.Fatalf("without an update rule the string form is written: %s", data)
		}
	}
	for _, doc := range []string{
		`{"version":1,"unsigned":{"rule":"warn","onUpdate":"yes"},"providers":[]}`,
		`{"version":1,"unsigned":{"onUpdate":"allow"},"providers":[]}`,
		`{"version":1,"unsigned":{"rule":"warn","onUpdate":"allow","extra":1},"providers":[]}`,
		`{"version":1,"unsigned":{"rule":"warn","onupdate":"allow"},"providers":[]}`,
		`{"version":1,"unsigned":{"rule":"warn","onUpdate":"allow","onUpdate":"block"},"providers":[]}`,
		`{"version":1,"unsigned":{"rule":"sometimes"},"providers":[]}`,
		`{"version":1,"unsigned":["warn"],"providers":[]}`,
		`{"version":1,"unsigned":{"rule":"warn","onUpdate":1},"providers":[]}`,
	} {
		if p, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%s read: %+v", doc, p)
		}
	}
	if _, err := ParseUpdateRule("Allow"); err == nil {
		t.Error("Allow read as allow")
	}
}
