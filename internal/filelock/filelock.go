// Package filelock takes exclusive advisory locks on open files: a lock
// is held as long as the process keeps the file open and ends with it,
// however the process ends (kill -9 included), so another process can
// tell a file whose owner is gone.
package filelock

import (
	"errors"
	"os"
)

// ErrLocked reports a file another process holds locked.
var ErrLocked = errors.New("the file is locked by another process")

// TryLock locks f exclusively without waiting; ErrLocked if another
// process holds it.
func TryLock(f *os.File) error { return tryLock(f) }
