package registrytest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPPublisher publishes with the registry's own mcp-publisher, as a
// provider does (here with anonymous login, offline): the entry is
// served as published, and a name outside the anonymous namespace is
// refused.
func TestMCPPublisher(t *testing.T) {
	r := Start(t)
	pub := Publisher(t)
	home := t.TempDir()
	run := func(args ...string) ([]byte, error) {
		cmd := exec.Command(pub, args...)
		cmd.Dir = home
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
		return cmd.CombinedOutput()
	}
	if out, err := run("login", "none", "--registry", r.URL); err != nil {
		t.Fatalf("login: %v\n%s", err, out)
	}
	name := "io.modelcontextprotocol.anonymous/weather"
	if err := os.WriteFile(filepath.Join(home, "server.json"), serverJSON(name, "2.0.0"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run("publish"); err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	b, err := r.Get(context.Background(), name, "2.0.0")
	if err != nil {
		t.Fatal(err)
	}
	var e entry
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	if e.Server.Name != name || e.Server.Version != "2.0.0" || len(e.Server.Packages) != 1 {
		t.Fatalf("served %+v", e.Server)
	}
	if err := os.WriteFile(filepath.Join(home, "other.json"), serverJSON("io.github.acme/weather", "1.0.0"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run("publish", "other.json"); err == nil {
		t.Fatalf("an anonymous publisher published io.github.acme/weather:\n%s", out)
	}
	if _, err := r.Get(context.Background(), "io.github.acme/weather", "1.0.0"); err == nil {
		t.Fatal("io.github.acme/weather is served")
	}
}

// TestBuild builds the registry and mcp-publisher into the cache (.ci/run
// runs it before the other tests, so that none of them pays for it) and
// runs each.
func TestBuild(t *testing.T) {
	for _, bin := range []string{Binary(t), Publisher(t)} {
		arg := "--help"
		if filepath.Base(bin) == "registry" {
			arg = "-version"
		}
		out, err := exec.Command(bin, arg).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", bin, arg, err, out)
		}
		want := map[string]string{"registry": "MCP Registry", "mcp-publisher": "MCP Registry Publisher Tool"}[filepath.Base(bin)]
		if !strings.Contains(string(out), want) {
			t.Fatalf("%s %s: no %q in\n%s", bin, arg, want, out)
		}
	}
}

// TestSourceDir finds the registry module's published documents.
func TestSourceDir(t *testing.T) {
	dir, err := SourceDir()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(filepath.ToSlash(dir), "github.com/modelcontextprotocol/registry@v1.8.9") {
		t.Fatalf("source directory %s is not registry v1.8.9's", dir)
	}
	for _, f := range []string{"docs/reference/api/openapi.yaml", "internal/validators/schemas/2025-12-11.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
}
