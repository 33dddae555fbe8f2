package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// TestCommandDocs regenerates the command reference from the current help
// and compares it, page by page, with docs/commands and docs/man: a help
// text changed without its pages fails here, naming the command that
// writes them again.
func TestCommandDocs(t *testing.T) {
	if *updateDocs {
		if err := writeCommandDocs("../../docs/commands", "../../docs/man"); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	if err := writeCommandDocs(filepath.Join(tmp, "commands"), filepath.Join(tmp, "man")); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"commands", "man"} {
		want, got := pages(t, filepath.Join(tmp, sub)), pages(t, filepath.Join("../../docs", sub))
		for name, w := range want {
			g, ok := got[name]
			switch {
			case !ok:
				t.Errorf("docs/%s/%s is missing; write the pages again: go generate ./cmd/etdi", sub, name)
			case !bytes.Equal(g, w):
				t.Errorf("docs/%s/%s differs from the help (first difference at line %d); write the pages again: go generate ./cmd/etdi", sub, name, firstDiffLine(g, w))
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("docs/%s/%s documents no command; write the pages again: go generate ./cmd/etdi", sub, name)
			}
		}
	}
}

// The reference documents every command etdi --help lists, and no hidden
// one.
func TestCommandDocsCoverTheTree(t *testing.T) {
	var names []string
	root := docTree()
	for _, c := range root.Commands() {
		names = append(names, c.Name())
	}
	if !slices.Contains(names, "check") || !slices.Contains(names, "completion") {
		t.Fatalf("commands %v", names)
	}
	tmp := t.TempDir()
	if err := writeCommandDocs(filepath.Join(tmp, "commands"), filepath.Join(tmp, "man")); err != nil {
		t.Fatal(err)
	}
	md := pages(t, filepath.Join(tmp, "commands"))
	for _, c := range root.Commands() {
		_, ok := md["etdi_"+c.Name()+".md"]
		if c.Hidden || c.Name() == "help" {
			if ok {
				t.Errorf("the hidden command %s has a page", c.Name())
			}
			continue
		}
		if !ok {
			t.Errorf("etdi %s has no page", c.Name())
		}
	}
	if page := string(md["etdi_verify.md"]); !strings.Contains(page, "--trust string") || !strings.Contains(page, `(default "~/.config/etdi/trust.json")`) {
		t.Errorf("etdi verify's page lacks its flags as a new user sees them:\n%s", page)
	}
}

func pages(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}

func firstDiffLine(a, b []byte) int {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// The command reference (docs/commands, docs/man) is generated from the
// help every command prints, by TestCommandDocs, so that cobra's
// documentation packages are linked into the test binary and never into
// etdi (every gate would pay their initialisation). Write it again with
//
//	go generate ./cmd/etdi
//
// or go test ./cmd/etdi -run '^TestCommandDocs$' -update-docs.
//go:generate go test -run ^TestCommandDocs$ -update-docs

var updateDocs = flag.Bool("update-docs", false, "write docs/commands and docs/man from the current help")

// manDate is the date every generated man page carries, so that the pages
// depend on the help text alone and a check can compare them byte for byte.
var manDate = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// writeCommandDocs generates the command reference into mdDir and manDir,
// replacing the pages there, from a command tree built in an environment
// of no variables, so that no default a user's machine chose appears.
func writeCommandDocs(mdDir, manDir string) error {
	root := docTree()
	for _, d := range []string{mdDir, manDir} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := doc.GenMarkdownTree(root, mdDir); err != nil {
		return err
	}
	date := manDate
	return doc.GenManTree(root, &doc.GenManHeader{Title: "ETDI", Section: "1", Source: "etdi", Manual: "etdi manual", Date: &date}, manDir)
}

// docTree is the command tree the reference describes: etdi's commands as
// etdi --help lists them (cobra's completion and version flag included), with the per-user configuration directory
// in flag defaults written as it is on Linux.
func docTree() *cobra.Command {
	e := &env{lookupEnv: func(string) (string, bool) { return "", false }}
	root := e.newRoot()
	root.InitDefaultVersionFlag()
	root.InitDefaultCompletionCmd()
	config := defaultPath("")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, fs := range []*pflag.FlagSet{c.LocalNonPersistentFlags(), c.PersistentFlags(), c.InheritedFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if config != "" && strings.HasPrefix(f.DefValue, config) {
					f.DefValue = "~/.config/etdi/" + strings.TrimPrefix(f.DefValue[len(config):], string(filepath.Separator))
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return root
}
