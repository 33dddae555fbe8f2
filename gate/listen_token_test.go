package gate

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The --listen token file: only one its owner alone can read, one line,
// not empty, bounded.
func TestReadListenToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, mode)
		return path
	}
	if tok, err := ReadListenToken(write("ok", "  s3cret-token-value\n", 0o600)); err != nil || tok != "s3cret-token-value" {
		t.Fatalf("a good token file: %q %v", tok, err)
	}
	bad := map[string]string{
		"empty":     write("empty", " \n", 0o600),
		"two lines": write("lines", "one\ntwo\n", 0o600),
		"too large": write("large", strings.Repeat("x", 4097), 0o600),
		"missing":   filepath.Join(dir, "none"),
		"directory": dir,
	}
	if runtime.GOOS != "windows" {
		bad["group-readable"] = write("group", "s3cret-token-value\n", 0o640)
		bad["world-readable"] = write("world", "s3cret-token-value\n", 0o604)
	}
	for name, path := range bad {
		if tok, err := ReadListenToken(path); err == nil {
			t.Errorf("%s: read %q", name, tok)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows the token: %v", name, err)
		}
	}
	// A token written on Windows (CRLF) reads; a symbolic link is held to
	// the mode of the file it names.
	if tok, err := ReadListenToken(write("crlf", "s3cret-token-value \r\n", 0o600)); err != nil || tok != "s3cret-token-value" {
		t.Errorf("CRLF: %q %v", tok, err)
	}
	if runtime.GOOS != "windows" {
		link := filepath.Join(dir, "link")
		if err := os.Symlink(bad["world-readable"], link); err != nil {
			t.Fatal(err)
		}
		if tok, err := ReadListenToken(link); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("a link to a world-readable file: %q %v", tok, err)
		}
	}
	if _, err := ReadListenToken(bad["group-readable"]); runtime.GOOS != "windows" && (err == nil || !strings.Contains(err.Error(), "chmod 600")) {
		t.Errorf("group-readable: %v", err)
	}
}
