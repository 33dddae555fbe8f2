package pin

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A reader that opens a database another process has just created, before
// that process wrote its first pages, waits for them instead of failing on
// an empty file; one that stays empty is reported as held, not damaged.
func TestReadOnlyOpenAwaitsCreation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pins.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, Options{ReadOnly: true, LockTimeout: 50 * time.Millisecond})
	var ce *CorruptError
	if !errors.Is(err, ErrLocked) || errors.As(err, &ce) {
		t.Fatalf("an empty file opened read-only: %v, want ErrLocked", err)
	}
	done := make(chan error, 1)
	go func() {
		s, err := Open(path, Options{ReadOnly: true, LockTimeout: 20 * time.Second})
		if err == nil {
			s.Close()
		}
		done <- err
	}()
	time.Sleep(30 * time.Millisecond)
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := <-done; err != nil {
		t.Fatalf("the reader of a database being created: %v", err)
	}
}
