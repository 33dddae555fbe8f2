package hostconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/etdi-dev/etdi/strictjson"
)

// FuzzJSONCSpans: on any input ParseJSONC never panics; replacing any
// located member value with its own text is the identity; on valid JSON
// every located member value parses to the value strictjson.Parse gives
// that member, and on JSONC to the value Load reads (StripJSONC).
func FuzzJSONCSpans(f *testing.F) {
	paths, _ := filepath.Glob("testdata/wrap/*.json")
	more, _ := filepath.Glob("testdata/*.json")
	paths = append(paths, more...)
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"a":"/* not a comment */","b":"// nor this","c":[1,2,],}`))
	f.Add([]byte(`{"a" /*x*/ : /*y*/ {"b": [true, null, -1.5e3]} // z
}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		root, err := ParseJSONC(data)
		if err != nil {
			return
		}
		want, werr := strictjson.Parse(StripJSONC(data))
		if werr != nil {
			// Only what etdi's profile refuses beyond syntax (unsafe
			// numbers, lone surrogates, depth) may be refused there.
			return
		}
		var walk func(n *Node, w *strictjson.Value)
		walk = func(n *Node, w *strictjson.Value) {
			got, err := strictjson.Parse(StripJSONC(data[n.Start:n.End]))
			if err != nil {
				t.Fatalf("span [%d,%d) %q does not parse: %v", n.Start, n.End, data[n.Start:n.End], err)
			}
			if !strictjson.Equal(got, w) {
				t.Fatalf("span [%d,%d) %q is not the member's value", n.Start, n.End, data[n.Start:n.End])
			}
			same, err := ApplyEdits(data, []Edit{{n.Start, n.End, string(data[n.Start:n.End])}})
			if err != nil || !bytes.Equal(same, data) {
				t.Fatalf("replacing a span with its own text changed the data: %v", err)
			}
			switch n.Kind {
			case '{':
				if len(n.Members) != len(w.Members) {
					t.Fatalf("%d members, want %d", len(n.Members), len(w.Members))
				}
				for i, m := range n.Members {
					if m.Name != w.Members[i].Name {
						t.Fatalf("member %q, want %q", m.Name, w.Members[i].Name)
					}
					walk(m.Value, w.Members[i].Value)
				}
			case '[':
				if len(n.Elems) != len(w.Elems) {
					t.Fatalf("%d elements, want %d", len(n.Elems), len(w.Elems))
				}
				for i, e := range n.Elems {
					walk(e, w.Elems[i])
				}
			}
		}
		walk(root, want)
	})
}

// FuzzWrapRoundTrip: whatever the file, Wrap either refuses it or
// rewrites it so that a second Wrap changes nothing and Unwrap with its
// records gives back the original bytes.
func FuzzWrapRoundTrip(f *testing.F) {
	for _, hf := range hostFiles {
		if b, err := os.ReadFile("testdata/wrap/" + hf.file); err == nil {
			f.Add(b, uint8(0))
		}
	}
	f.Add([]byte(`{"servers": {"x": {"type": "http", "url": "u", "headers": {"A": "b"},}}}`), uint8(1))
	f.Add([]byte("[mcp_servers.x]\ncommand = \"a\" # c\nargs = []\n"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		hosts := []struct{ path, host string }{
			{"/c/mcp.json", Cursor}, {"/c/.vscode/mcp.json", VSCode}, {"/c/zed/settings.json", Zed}, {"/c/config.toml", Codex},
		}
		h := hosts[int(which)%len(hosts)]
		res, err := Wrap(h.path, data, WrapOptions{Host: h.host, Etdi: testEtdi})
		if err != nil {
			return
		}
		again, err := Wrap(h.path, res.Data, WrapOptions{Host: h.host, Etdi: testEtdi})
		if err != nil || !bytes.Equal(again.Data, res.Data) {
			t.Fatalf("second wrap: %v\n%q\n%+v", err, res.Data, again)
		}
		un, err := Unwrap(h.path, res.Data, UnwrapOptions{Host: h.host, Records: res.Records, Gate: testGate()})
		if err != nil || !bytes.Equal(un.Data, data) {
			t.Fatalf("unwrap: %v\n%q\n%+v", err, data, un)
		}
	})
}
