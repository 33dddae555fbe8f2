package guard

import (
	"errors"
	"fmt"
	"os"

	"github.com/etdi-dev/etdi/pin"
)

// errNoPins says that the pin database does not exist yet.
var errNoPins = errors.New("no pin database")

// withPins opens the pin database for fn and closes it right after: a
// gate that runs for hours never holds it. readOnly takes a shared lock
// (other readers proceed), and fails with errNoPins when there is no
// database yet; otherwise the database is created if needed.
func withPins(opts Options, readOnly bool, fn func(s *pin.Store) error) error {
	if opts.Pins == "" {
		return errors.New("guard: no pin database given")
	}
	if readOnly {
		if _, err := os.Stat(opts.Pins); errors.Is(err, os.ErrNotExist) {
			return errNoPins
		}
	}
	s, err := pin.Open(opts.Pins, pin.Options{LockTimeout: opts.LockTimeout, ReadOnly: readOnly})
	if err != nil {
		return err
	}
	err = fn(s)
	if cerr := s.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing the pin database: %w", cerr)
	}
	return err
}
