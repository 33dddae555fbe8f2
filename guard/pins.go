package guard

import (
	"errors"
	"fmt"
	"os"

	"github.com/etdi-dev/etdi/pin"
)

// errNoPins says that the pin database does not exist yet.
var errNoPins = errors.New("no pin database")

// WithPins opens the pin database opts.Pins for fn and closes it right
// after: a gate that runs for hours never holds it. readOnly takes a
// shared lock (other readers proceed), and fails when there is no
// database yet; otherwise the database is created if needed.
func (opts Options) WithPins(readOnly bool, fn func(s *pin.Store) error) error {
	if opts.Pins == "" {
		return errors.New("guard: no pin database given")
	}
	if readOnly && !pin.IsEtcd(opts.Pins) {
		if _, err := os.Stat(opts.Pins); errors.Is(err, os.ErrNotExist) {
			return errNoPins
		}
	}
	s, err := pin.Open(opts.Pins, opts.PinOptions(readOnly))
	if readOnly && pin.IsEtcd(opts.Pins) && errors.Is(err, os.ErrNotExist) {
		return errNoPins
	}
	if err != nil {
		return err
	}
	err = fn(s)
	if cerr := s.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing the pin database: %w", cerr)
	}
	return err
}

// PinOptions are the options to open opts.Pins with.
func (opts Options) PinOptions(readOnly bool) pin.Options {
	return pin.Options{LockTimeout: opts.LockTimeout, ReadOnly: readOnly, Etcd: opts.Etcd}
}

// LocalPins is the file of the pin store on this machine, beside which
// the gate keeps its files: the database, or an etcd store's snapshot.
func (opts Options) LocalPins() string {
	f, err := pin.LocalFile(opts.Pins, opts.PinOptions(false))
	if err != nil {
		return opts.Pins
	}
	return f
}
