package guard

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkResolveOrigin: what resolving a launch costs before a server
// starts: the SHA-256 of a program (this test binary), and an npm package
// from the fixtures' package-lock.json (121 packages, 44 KB).
func BenchmarkResolveOrigin(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(exe)
	mcp, _ := filepath.Abs("../testdata/mcp")
	for _, c := range []struct {
		name string
		s    Launch
		size int64
	}{
		{"file", Launch{Command: []string{exe}, Env: []string{}}, fi.Size()},
		{"npm", Launch{Command: []string{"npx", "--no-install", "@modelcontextprotocol/server-memory"}, Dir: mcp, Env: []string{"HOME=" + b.TempDir()}}, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			if c.size > 0 {
				b.SetBytes(c.size)
			}
			for b.Loop() {
				if o := ResolveOrigin(context.Background(), c.s); o.Unresolved() != nil {
					b.Fatal(o.Unresolved())
				}
			}
		})
	}
}
