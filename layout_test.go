package etdi

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMELayout checks the Layout section of README.md against the
// tree: every top-level directory and every Go package has its line, so a
// package added without a word about it fails here.
func TestREADMELayout(t *testing.T) {
	readme := string(mustRead(t, "README.md"))
	_, block, ok := strings.Cut(readme, "\n## Layout\n\n```\n")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	block, _, _ = strings.Cut(block, "\n```\n")
	listed := func(dir string, prefix bool) bool {
		end := `(\s|$|[,:)])`
		if prefix {
			end = ""
		}
		return regexp.MustCompile(`(?m)(^|[\s,(])` + regexp.QuoteMeta(dir+"/") + end).MatchString(block)
	}
	top, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range top {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !listed(e.Name(), true) {
			t.Errorf("README.md's Layout does not list the directory %s/", e.Name())
		}
	}
	packages := map[string]bool{}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") && filepath.Dir(path) != "." {
			packages[filepath.ToSlash(filepath.Dir(path))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"pin", "guard", "internal/termtext", "cmd/etdi"} {
		if !packages[must] {
			t.Fatalf("the walk found no package %s: %v", must, packages)
		}
	}
	for p := range packages {
		if !listed(p, false) {
			t.Errorf("README.md's Layout does not list the package %s/", p)
		}
	}
}
