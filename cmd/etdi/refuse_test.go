package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// memoryProject makes dir a project directory that runs the real
// server-memory package from the fixtures with npx, its own copy of the
// package writing marker when it starts: the server command is
// npx --no-install @modelcontextprotocol/server-memory.
func memoryProject(dir, marker string) error {
	mcp, err := filepath.Abs(mcpDir)
	if err != nil {
		return err
	}
	nm := filepath.Join(dir, "node_modules")
	scope := filepath.Join(nm, "@modelcontextprotocol")
	if err := os.MkdirAll(scope, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(mcp, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return err
		}
	}
	ents, _ := os.ReadDir(filepath.Join(mcp, "node_modules"))
	for _, e := range ents {
		if e.Name() != ".bin" && e.Name() != "@modelcontextprotocol" {
			if err := os.Symlink(filepath.Join(mcp, "node_modules", e.Name()), filepath.Join(nm, e.Name())); err != nil {
				return err
			}
		}
	}
	// .bin's links are relative: copied, they point into this project.
	if out, err := exec.Command("cp", "-a", filepath.Join(mcp, "node_modules", ".bin"), nm).CombinedOutput(); err != nil {
		return fmt.Errorf("%v %s", err, out)
	}
	ents, _ = os.ReadDir(filepath.Join(mcp, "node_modules", "@modelcontextprotocol"))
	for _, e := range ents {
		if e.Name() != "server-memory" {
			if err := os.Symlink(filepath.Join(mcp, "node_modules", "@modelcontextprotocol", e.Name()), filepath.Join(scope, e.Name())); err != nil {
				return err
			}
		}
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(mcp, "node_modules", "@modelcontextprotocol", "server-memory"), scope).CombinedOutput(); err != nil {
		return fmt.Errorf("%v %s", err, out)
	}
	index := filepath.Join(scope, "server-memory", "dist", "index.js")
	src, err := os.ReadFile(index)
	if err != nil {
		return err
	}
	shebang, rest, _ := strings.Cut(string(src), "\n")
	src = []byte(shebang + "\nimport { appendFileSync as etdiTestMark } from \"node:fs\"; etdiTestMark(" + strconvQuote(marker) + ", \"started\\n\");\n" + rest)
	if err := os.WriteFile(index, src, 0o755); err != nil {
		return err
	}
	return nil
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// exitCodesIn returns the exit codes a paragraph names: the numbers 0-2
// and 10-14 standing alone (not section numbers or parts of others).
func exitCodesIn(text string) []int {
	seen := map[int]bool{}
	for _, m := range regexp.MustCompile(`(?:^|[^0-9.§\-])(1[0-4]|[0-2])(?:[^0-9.]|\.(?:\s|$)|$)`).FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[1])
		seen[n] = true
	}
	var out []int
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// paragraph is the text of doc from the line starting with anchor to the
// next blank line.
func paragraph(t *testing.T, doc, anchor string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+anchor)
	if i < 0 {
		t.Fatalf("no paragraph %q", anchor)
	}
	rest := doc[i+1:]
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// Every exit code of etdi run is in its --help, the README and
// docs/gate.md, and none other.
//
// It stays Go: it compares each text with runExitCodes, the table etdi run
// itself exits with, which a script cannot read.
func TestRunExitCodesDocumented(t *testing.T) {
	readme, _ := os.ReadFile("../../README.md")
	gate, _ := os.ReadFile("../../docs/gate.md")
	help := runEtdi(t, t.TempDir(), nil, "run", "--help").stdout
	help = help[:strings.Index(help, "Usage:")]
	want := slices.Clone(runExitCodes)
	slices.Sort(want)
	for name, text := range map[string]string{
		"--help":       help[strings.Index(help, "Exit codes:"):],
		"README":       paragraph(t, string(readme), "`etdi run` exit codes:"),
		"docs/gate.md": paragraph(t, string(gate), "**Exit codes** of `etdi run`:"),
	} {
		if got := exitCodesIn(text); !slices.Equal(got, want) {
			t.Errorf("%s names exit codes %v, etdi run has %v:\n%s", name, got, want, text)
		}
	}
}
