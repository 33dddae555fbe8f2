package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// denseList writes a tools/list file of tools tools, each an object with
// a name and an enum of words distinct words: 2 + tools*(4+words) values.
func denseList(t *testing.T, path string, tools, words int) {
	var b strings.Builder
	b.WriteString(`{"tools":[`)
	for i := range tools {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"dense_%d","inputSchema":{"enum":[`, i)
		for j := range words {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"w_%d_%d"`, i, j)
		}
		b.WriteString("]}}")
	}
	b.WriteString("]}")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A saved listing is checked under the bound of a live one: 250,000 JSON
// values in all, whatever its size in bytes. At the bound it is checked.
func TestCheckDenseToolsFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "trust.json"), []byte(`{"version":1,"unsigned":"warn","providers":[]}`), 0o644)
	// 6 tools of 4 + 41,662 values: 2 + 249,996 = 249,998.
	denseList(t, filepath.Join(dir, "ok.json"), 6, 41_662)
	// One value per tool more: 250,004.
	denseList(t, filepath.Join(dir, "over.json"), 6, 41_663)
	r := runEtdi(t, dir, nil, "check", "--trust", "trust.json", "--pins", "pins.db", "--name", "dense", "--tools", "over.json")
	if r.code != 1 || !strings.Contains(r.stderr+r.stdout, "over.json: invalid JSON at byte") ||
		!strings.Contains(r.stderr+r.stdout, "more than 250000 JSON values in the listing") {
		t.Fatalf("exit %d:\n%.1000s\n%.1000s", r.code, r.stdout, r.stderr)
	}
	r = runEtdi(t, dir, nil, "check", "--trust", "trust.json", "--pins", "pins.db", "--name", "dense", "--tools", "ok.json", "--json")
	if r.code != 13 || !strings.Contains(r.stdout, `"dense_5"`) {
		t.Fatalf("exit %d:\n%.1000s\n%.1000s", r.code, r.stdout, r.stderr)
	}
}
