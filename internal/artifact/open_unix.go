//go:build unix

package artifact

import (
	"os"
	"syscall"
)

// openNoBlock opens path for reading; O_NONBLOCK keeps a FIFO put in the
// place of a file from blocking the open. It does not change reads of a
// regular file.
func openNoBlock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
