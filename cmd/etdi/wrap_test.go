package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The tests of etdi wrap and unwrap are the scripts
// testdata/script/wrap_*.txtar and unwrap_*.txtar.

// wrapHome is a home directory whose default trust policy exists, as
// etdi wrap requires.
func wrapHome(t *testing.T) string {
	dir := t.TempDir()
	writeText(t, filepath.Join(dir, ".config", "etdi", "trust.json"), `{"version":1,"unsigned":"warn","providers":[]}`, 0o644)
	return dir
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeText(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
