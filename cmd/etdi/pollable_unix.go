//go:build unix

package main

import (
	"os"
	"syscall"
)

// pollable returns a standard stream that is a pipe or a socket as a file
// the Go runtime waits on with its poller, instead of blocking a thread
// in read or write: a gate relays thousands of small messages, and each
// blocked thread costs a hand-off to wake it. Anything else (a terminal,
// whose mode the shell shares; a regular file) is returned as it is.
func pollable[T any](s T) T {
	f, ok := any(s).(*os.File)
	if !ok {
		return s
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return s
	}
	fd := int(f.Fd())
	dup, err := syscall.Dup(fd)
	if err != nil {
		return s
	}
	if err := syscall.SetNonblock(dup, true); err != nil {
		syscall.Close(dup)
		return s
	}
	p, ok := any(os.NewFile(uintptr(dup), f.Name())).(T)
	if !ok {
		syscall.Close(dup)
		return s
	}
	return p
}
