package gate

import (
	"errors"
	"testing"
)

// More than 128 MiB waiting for a side that does not read ends the
// session (errFlooded) instead of growing the memory; what fits is
// delivered in order.
func TestOutboxFlooded(t *testing.T) {
	o := newOutbox()
	big := make([]byte, 1<<20) // one buffer, sent many times: no 128 MiB held by the test
	for range maxQueued>>20 + 1 {
		o.send(big)
	}
	o.close(nil)
	written := 0
	err := o.run(func([]byte) error { written++; return nil })
	if !errors.Is(err, errFlooded) || written != 0 {
		t.Fatalf("flooded outbox: %v, %d written", err, written)
	}
	o = newOutbox()
	for range maxQueued >> 20 {
		o.send(big)
	}
	o.close(nil)
	if err := o.run(func([]byte) error { written++; return nil }); err != nil || written != maxQueued>>20 {
		t.Fatalf("an outbox at its bound: %v, %d written", err, written)
	}
}
