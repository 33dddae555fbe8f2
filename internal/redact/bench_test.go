package redact

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkString: masking 4 KiB of captured stderr (the most etdi keeps)
// against the secrets of a server with 10 env values, 2 headers and a URL.
func BenchmarkString(b *testing.B) {
	var s Set
	for i := range 10 {
		s.Add(fmt.Sprintf("env-value-%02d-0123456789", i))
	}
	s.Add("Bearer header-token-0123456789", "x-api-key-0123456789")
	s.AddURL("https://user:password-0123@h.example/mcp?token=query-0123456789")
	text := strings.Repeat("line of server stderr with env-value-03-0123456789 in it\n", 4096/56)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		_ = s.String(text)
	}
}
