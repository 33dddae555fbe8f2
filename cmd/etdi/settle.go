package main

import (
	"context"
	"runtime/debug"
	"sync"

	"github.com/etdi-dev/etdi/guard"
)

// settleConn is a host connection that, once the gate has written its
// first message to the host (the answer to initialize, which the gate
// sends only after it has listed and checked the server itself), gives
// the operating system back what etdi's start used and a relay no longer
// needs: the garbage of start-up (debug.FreeOSMemory) and, on Linux, the
// pages of etdi's program file that start-up read (trimProgram). A gate
// lives as long as its host session, beside many others; what it uses
// from then on is read again on demand.
type settleConn struct {
	guard.Conn
	once   sync.Once
	settle func() // run once, in its own goroutine
}

// settleAfterFirstAnswer wraps the gate's host connection in a settleConn.
func settleAfterFirstAnswer(c guard.Conn) guard.Conn {
	return &settleConn{Conn: c, settle: settle}
}

func (c *settleConn) Write(ctx context.Context, msg []byte) error {
	err := c.Conn.Write(ctx, msg)
	if err == nil {
		c.once.Do(func() { go c.settle() })
	}
	return err
}

// settle returns start-up memory to the operating system.
func settle() {
	debug.FreeOSMemory()
	trimProgram()
}
