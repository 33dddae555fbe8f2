package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The tests of etdi wrap and unwrap are the scripts
// testdata/script/wrap_*.txtar and unwrap_*.txtar; the helpers below
// are the other tests' file helpers.

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
