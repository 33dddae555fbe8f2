package etdi

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDocumentLinks follows every relative link of README.md, SPEC.md and
// the manual (docs/*.md): the file it names exists, and so does the
// heading or anchor after its #, as GitHub renders them. A section moved
// or renamed without its links fails here.
func TestDocumentLinks(t *testing.T) {
	files := []string{"README.md", "SPEC.md"}
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, pages...)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := markdownAnchors(string(mustRead(t, path)))
		anchors[path] = a
		return a
	}
	checked := 0
	for _, f := range files {
		text := string(mustRead(t, f))
		for _, m := range link.FindAllStringSubmatch(stripCode(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			if path == "" {
				path = f
			} else {
				path = filepath.Join(filepath.Dir(f), path)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", f, target)
				continue
			}
			checked++
			if frag != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[frag] {
				t.Errorf("%s links to %s: %s has no heading or anchor %q", f, target, path, frag)
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d links checked", checked)
	}
}

// stripCode removes fenced code blocks, whose brackets are not links.
func stripCode(text string) string {
	return regexp.MustCompile("(?s)\n```.*?\n```").ReplaceAllString(text, "\n")
}

// markdownAnchors returns the anchors of a Markdown document: each
// heading's slug as GitHub makes it (lower case, punctuation dropped,
// spaces as hyphens, -1, -2, ... for repeats) and every <a id="...">.
func markdownAnchors(text string) map[string]bool {
	a := map[string]bool{}
	seen := map[string]int{}
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	for _, m := range regexp.MustCompile(`(?m)^#{1,6} (.+)$`).FindAllStringSubmatch(stripCode(text), -1) {
		s := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		if n := seen[s]; n > 0 {
			a[s+"-"+strconv.Itoa(n)] = true
		} else {
			a[s] = true
		}
		seen[s]++
	}
	for _, m := range regexp.MustCompile(`<a id="([^"]+)"></a>`).FindAllStringSubmatch(text, -1) {
		a[m[1]] = true
	}
	return a
}

// TestCodeDocumentReferences checks what the Go code (comments, help
// text, messages) says about the documents: every "SPEC.md §N" names a
// section SPEC.md has, and every docs/PAGE.md#anchor a page and heading
// the manual has.
func TestCodeDocumentReferences(t *testing.T) {
	spec := string(mustRead(t, "SPEC.md"))
	sections := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\d+)\. |^### (\d+\.\d+) `).FindAllStringSubmatch(spec, -1) {
		sections[m[1]+m[2]] = true
	}
	specRef := regexp.MustCompile(`SPEC(?:\.md)?\s+§(\d+(?:\.\d+)?)`)
	docRef := regexp.MustCompile(`(?:^|[^/\w])docs/([a-z]+\.md)(?:#([a-z0-9-]+))?`)
	refs := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		text := string(mustRead(t, path))
		for _, m := range specRef.FindAllStringSubmatch(text, -1) {
			refs++
			if !sections[m[1]] {
				t.Errorf("%s refers to SPEC.md §%s, which SPEC.md does not have", path, m[1])
			}
		}
		for _, m := range docRef.FindAllStringSubmatch(text, -1) {
			refs++
			page := filepath.Join("docs", m[1])
			if _, err := os.Stat(page); err != nil {
				t.Errorf("%s refers to %s, which does not exist", path, page)
				continue
			}
			if m[2] != "" && !markdownAnchors(string(mustRead(t, page)))[m[2]] {
				t.Errorf("%s refers to %s#%s: no such heading", path, page, m[2])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if refs < 100 {
		t.Errorf("only %d references found", refs)
	}
}

// TestManualIndex: docs/README.md, the manual's index, links every page
// of the manual.
func TestManualIndex(t *testing.T) {
	index := string(mustRead(t, "docs/README.md"))
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		name := filepath.Base(p)
		if name != "README.md" && !strings.Contains(index, "]("+name+")") {
			t.Errorf("docs/README.md does not link %s", p)
		}
	}
}
