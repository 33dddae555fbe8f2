package strictjson

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzCanonicalize checks the strict parser and RFC 8785 encoder: whatever
// is accepted is valid JSON for encoding/json too, its canonical form is a
// fixed point, and the canonical form means the same as the input.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x\u0000"]}`, `[1e-7,0.1,-0,123456789012]`, `"\ud83d\ude00"`, `{"\u20ac":1,"\r":2}`, `[[[[]]]]`} {
		f.Add([]byte(s))
	}
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "vectors", "*", "tools.json"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted input that encoding/json rejects: %q", data)
		}
		canon := AppendCanonical(nil, v)
		again, err := Canonicalize(canon)
		if err != nil {
			t.Fatalf("canonical form does not parse: %v\n%s", err, canon)
		}
		if !bytes.Equal(again, canon) {
			t.Fatalf("canonical form is not a fixed point:\n%s\n%s", canon, again)
		}
		var a, b any
		if err := json.Unmarshal(data, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(canon, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("canonical form changes the value:\n%q\n%s", data, canon)
		}
	})
}
