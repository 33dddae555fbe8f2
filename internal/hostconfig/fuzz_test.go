package hostconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/etdi-dev/etdi/strictjson"
)

// FuzzStripJSONC: on plain JSON (no comments, no trailing commas)
// stripping changes nothing; on anything, it never panics and what it
// returns, if JSON, is what Load reads.
func FuzzStripJSONC(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.json")
	paths = append(paths, "testdata/project/.vscode/mcp.json", "testdata/project/.cursor/mcp.json")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"a":"/* not a comment */","b":"// nor this","c":[1,2,],}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out := StripJSONC(data)
		if !bytes.Contains(data, []byte("/")) && !bytes.Contains(data, []byte(",")) && !bytes.Equal(out, data) {
			t.Fatalf("changed JSON without comments or commas:\n%q\n%q", data, out)
		}
		if v, err := strictjson.Parse(data); err == nil {
			w, err := strictjson.Parse(out)
			if err != nil {
				t.Fatalf("stripping broke valid JSON: %v\n%q\n%q", err, data, out)
			}
			if !strictjson.Equal(v, w) {
				t.Fatalf("stripping changed a JSON value:\n%q\n%q", data, out)
			}
		}
	})
}
