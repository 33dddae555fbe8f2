package gate

import (
	"context"
	"errors"
	"sync"
)

// maxQueued bounds the bytes waiting in one direction of a gate: a
// server that floods a host that does not read (or the other way round)
// ends the session rather than the memory.
const maxQueued = 128 << 20

// errFlooded ends a session whose queue is full.
var errFlooded = errors.New("more than 128 MiB of messages wait to be delivered: the other side does not read")

// outbox delivers messages to one side of a session in the order their
// slots were reserved, whenever each slot is filled: a message that is
// still being checked holds back the ones behind it, never reorders them.
// Whoever fills the slot at the head writes it at once, unless a write is
// under way; the goroutine of run writes whatever that left, so a
// message is never delayed by a hand-off when nothing is ahead of it.
type outbox struct {
	mu      sync.Mutex
	cond    *sync.Cond
	q       []*slot
	bytes   int
	err     error // set once: the queue is done
	closed  bool
	writing bool               // a write is under way
	write   func([]byte) error // set by run
}

type slot struct {
	filled bool
	msgs   [][]byte
}

func newOutbox() *outbox {
	o := &outbox{}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// reserve takes the next place in the order.
func (o *outbox) reserve() *slot {
	s := &slot{}
	o.mu.Lock()
	o.q = append(o.q, s)
	o.mu.Unlock()
	return s
}

// fill gives a reserved slot its messages (none: nothing to deliver) and,
// when it is at the head and no write is under way, writes what is ready.
func (o *outbox) fill(s *slot, msgs ...[]byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s.filled {
		return
	}
	s.filled, s.msgs = true, msgs
	for _, m := range msgs {
		o.bytes += len(m)
	}
	if o.bytes > maxQueued && o.err == nil {
		o.err = errFlooded
	}
	if o.write != nil && !o.writing && o.err == nil {
		o.drain()
	}
	// Wake the goroutine of run only for what is left to write (or to
	// fail): a wake-up for nothing is a context switch per message.
	if o.err != nil || (!o.writing && len(o.q) > 0 && o.q[0].filled) {
		o.cond.Broadcast()
	}
}

// send delivers msg after everything reserved before it.
func (o *outbox) send(msg []byte) { o.fill(o.reserve(), msg) }

// drain writes the filled slots at the head; o.mu is held, and released
// around each write.
func (o *outbox) drain() {
	o.writing = true
	defer func() {
		o.writing = false
		if o.closed || o.err != nil {
			o.cond.Broadcast() // run waits for the write under way to end
		}
	}()
	for len(o.q) > 0 && o.q[0].filled && o.err == nil {
		s := o.q[0]
		o.q[0] = nil
		o.q = o.q[1:]
		for _, m := range s.msgs {
			o.mu.Unlock()
			err := o.write(m)
			o.mu.Lock()
			o.bytes -= len(m)
			if err != nil && o.err == nil {
				o.err = err
			}
		}
	}
}

// close stops the writer once what is filled at the head is written; err,
// if not nil, is what run returns.
func (o *outbox) close(err error) {
	o.mu.Lock()
	if o.err == nil {
		o.err = err
	}
	o.closed = true
	o.cond.Broadcast()
	o.mu.Unlock()
}

// run writes the slots in order with write until the outbox is closed or
// a write fails.
func (o *outbox) run(write func([]byte) error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.write = write
	for {
		for (o.writing || len(o.q) == 0 || !o.q[0].filled) && !o.closed && o.err == nil {
			o.cond.Wait()
		}
		if o.err != nil || (o.closed && !o.writing && (len(o.q) == 0 || !o.q[0].filled)) {
			if o.closed && o.writing && o.err == nil {
				continue // a write under way finishes first
			}
			return o.err
		}
		if o.writing {
			o.cond.Wait()
			continue
		}
		o.drain()
		o.cond.Broadcast()
	}
}

// jobs runs functions one at a time in the order they were added: every
// decision of a gate (what to forward, what to filter, what to list) is
// made in order by one goroutine, so its state needs no other lock. Adding
// never blocks: the goroutines that read the host and the server must keep
// reading while a job waits for the server's answer.
type jobs struct {
	mu      sync.Mutex
	cond    *sync.Cond
	q       []func()
	closed  bool
	running bool // a job runs now
}

func newJobs() *jobs {
	j := &jobs{}
	j.cond = sync.NewCond(&j.mu)
	return j
}

func (j *jobs) add(fn func()) {
	j.mu.Lock()
	j.q = append(j.q, fn)
	j.cond.Signal()
	j.mu.Unlock()
}

// do runs fn at once in the caller's goroutine when no job runs or waits,
// else adds it: a decision with nothing ahead of it costs no hand-off.
// Only a goroutine that may wait for a job's end may call it (not the
// one that reads the server, which a job may be waiting for).
func (j *jobs) do(fn func()) {
	j.mu.Lock()
	if j.running || len(j.q) > 0 || j.closed {
		j.q = append(j.q, fn)
		j.cond.Signal()
		j.mu.Unlock()
		return
	}
	j.running = true
	j.mu.Unlock()
	fn()
	j.mu.Lock()
	j.running = false
	if len(j.q) > 0 || j.closed {
		j.cond.Signal() // the goroutine of run takes over what came meanwhile
	}
	j.mu.Unlock()
}

// close makes run return once the jobs added so far are done.
func (j *jobs) close() {
	j.mu.Lock()
	j.closed = true
	j.cond.Signal()
	j.mu.Unlock()
}

// run runs jobs until close, or until ctx ends (the rest are dropped).
func (j *jobs) run(ctx context.Context) {
	for {
		j.mu.Lock()
		for (len(j.q) == 0 || j.running) && !(j.closed && !j.running && len(j.q) == 0) {
			j.cond.Wait()
		}
		if len(j.q) == 0 || ctx.Err() != nil {
			j.mu.Unlock()
			return
		}
		fn := j.q[0]
		j.q[0] = nil
		j.q = j.q[1:]
		j.running = true
		j.mu.Unlock()
		fn()
		j.mu.Lock()
		j.running = false
		j.mu.Unlock()
	}
}
