package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/etdi-dev/etdi/internal/mcpclient"
)

// BenchmarkLive compares, for the fixture server (2 tools) and its
// paginated mode (250 tools in 7 pages), a bare spawn + initialize +
// tools/list (in-process, the same client code) with a whole
// "etdi check --server" process against approved pins. The difference is
// what etdi adds: process start, trust policy, digests, pin comparison.
func BenchmarkLive(b *testing.B) {
	needNode(b)
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "trust.json"), []byte(`{"version":1,"unsigned":"allow","providers":[]}`), 0o644)
	for _, mode := range []string{"", "paginate"} {
		env := append(os.Environ(), "FIXTURE_MODE="+mode)
		name := "tools=2"
		if mode != "" {
			name = "tools=250"
		}
		argv := []string{"node", fixtureJS}
		b.Run(name+"/bare", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := mcpclient.Stdio(context.Background(), argv, env, "", mcpclient.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/etdi-check", func(b *testing.B) {
			args := []string{"check", "--trust", "trust.json", "--pins", "pins-" + name + ".db", "--name", "bench-" + name, "--server", "--"}
			args = append(args, argv...)
			approve := exec.Command(etdiBin, append(args[:1:1], append([]string{"--yes"}, args[1:]...)...)...)
			approve.Dir, approve.Env = dir, env
			if out, err := approve.CombinedOutput(); err != nil {
				b.Fatalf("approve: %v %s", err, out)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(etdiBin, args...)
				cmd.Dir, cmd.Env = dir, env
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v %s", err, out)
				}
			}
		})
	}
}
