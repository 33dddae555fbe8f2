package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A file locked through one open is locked for another, until the first
// is closed (as when its process ends).
func TestTryLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	a, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := TryLock(a); err != nil {
		t.Fatal(err)
	}
	b, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := TryLock(b); !errors.Is(err, ErrLocked) {
		t.Fatalf("a locked file: %v", err)
	}
	a.Close()
	if err := TryLock(b); err != nil {
		t.Fatalf("after the holder closed it: %v", err)
	}
}
