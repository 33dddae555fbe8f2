package strictjson

import (
	"strings"
	"testing"
)

// TestNestingDepthObjects bounds object nesting, not just arrays: a
// hostile tools/list nests inputSchema objects to exhaust the stack of
// every later walk (canonicalization, diffs, schema display).
func TestNestingDepthObjects(t *testing.T) {
	nest := func(n int) string {
		return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n)
	}
	mixed := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			if i%2 == 0 {
				b.WriteString(`{"p":`)
			} else {
				b.WriteString("[")
			}
		}
		b.WriteString("0")
		for i := n - 1; i >= 0; i-- {
			if i%2 == 0 {
				b.WriteString("}")
			} else {
				b.WriteString("]")
			}
		}
		return b.String()
	}
	for _, tc := range []struct {
		name string
		in   string
		ok   bool
	}{
		{"objects at the limit", nest(MaxDepth), true},
		{"objects one deeper", nest(MaxDepth + 1), false},
		{"objects far deeper", nest(100_000), false},
		{"objects and arrays at the limit", mixed(MaxDepth), true},
		{"objects and arrays one deeper", mixed(MaxDepth + 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if tc.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "nesting deeper than")) {
				t.Fatalf("error %v, want nesting deeper than %d", err, MaxDepth)
			}
		})
	}
}
