package hostconfig

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkWrap200: wrap and unwrap a configuration of 200 stdio and 200
// remote entries with comments.
func BenchmarkWrap200(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("{\n  // many servers\n  \"mcpServers\": {\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&sb, "    \"s%d\": {\"command\": \"node\", \"args\": [\"s%d.js\", \"--flag\"], \"env\": {\"K\": \"v\"}}, // stdio\n", i, i)
		fmt.Fprintf(&sb, "    \"r%d\": {\"url\": \"https://r%d.example/mcp\", \"headers\": {\"Authorization\": \"Bearer t%d\"}},\n", i, i, i)
	}
	sb.WriteString("  }\n}\n")
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		res, err := Wrap("/c/mcp.json", data, WrapOptions{Host: Cursor, Etdi: testEtdi})
		if err != nil || res.Count(StatusWrapped) != 400 {
			b.Fatal(err)
		}
		if _, err := Unwrap("/c/mcp.json", res.Data, UnwrapOptions{Host: Cursor, Records: res.Records, Gate: testGate()}); err != nil {
			b.Fatal(err)
		}
	}
}
