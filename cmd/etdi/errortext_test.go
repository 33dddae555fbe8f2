package main

import (
	"bytes"
	"errors"
	"testing"
)

// TestListErrorEscapesEachItem: an item of a list error (a path, a
// name from a database) is escaped on its own line, so that a newline or
// terminal control in it cannot forge a line.
func TestListErrorEscapesEachItem(t *testing.T) {
	var b bytes.Buffer
	err := &linesError{errors.New("2 things"), []string{"one", "two\netdi: error: forged\x1b[2J"}}
	sayError(&b, &wrapped{err})
	want := "etdi: error: outer: 2 things:\n  one\n  two\\netdi: error: forged\\u{1B}[2J\n"
	if b.String() != want {
		t.Fatalf("got %q\nwant %q", b.String(), want)
	}
	b.Reset()
	sayError(&b, errors.New("plain\nline"))
	if b.String() != "etdi: error: plain\\nline\n" {
		t.Fatalf("plain error: %q", b.String())
	}
}

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "outer: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }
