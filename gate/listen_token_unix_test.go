//go:build unix

package gate

import (
	"path/filepath"
	"syscall"
	"testing"
)

// A named pipe as the token file is refused before it is opened: opening
// it would wait for a writer.
func TestReadListenTokenPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadListenToken(path); done <- err }()
	if err := recv(t, "ReadListenToken of a named pipe", done); err == nil {
		t.Fatal("a named pipe was read as the token file")
	}
}
