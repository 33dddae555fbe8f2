//go:build !unix && !windows

package filelock

import (
	"errors"
	"os"
)

func tryLock(f *os.File) error { return errors.New("file locks are not supported here") }
