package main

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"github.com/etdi-dev/etdi/guard"
)

// settleIdle is how long a gate's host connection stays quiet, once the
// host has had its first answer, before the gate settles.
const settleIdle = time.Second

// settleConn is a host connection that, once the session has started
// (the gate sends its first answer only after it has listed and checked
// the server itself) and then gone quiet for settleIdle, gives the
// operating system back what etdi's start used and a relay no longer
// needs: the garbage of start-up (debug.FreeOSMemory) and, on Linux, the
// pages of etdi's program file that start-up read (trimProgram). A gate
// lives as long as its host session, beside many others; what it uses
// from then on is read again on demand. It settles once.
type settleConn struct {
	guard.Conn
	idle   time.Duration
	settle func() // run once, in its own goroutine

	mu      sync.Mutex
	timer   *time.Timer // armed by the first answer, reset by every other
	settled bool
}

// settleAfterFirstAnswer wraps the gate's host connection in a settleConn.
func settleAfterFirstAnswer(c guard.Conn) guard.Conn {
	return &settleConn{Conn: c, idle: settleIdle, settle: settle}
}

func (c *settleConn) Write(ctx context.Context, msg []byte) error {
	err := c.Conn.Write(ctx, msg)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.settled:
	case c.timer == nil:
		c.timer = time.AfterFunc(c.idle, c.fire)
	default:
		c.timer.Reset(c.idle)
	}
	return nil
}

// fire settles, once.
func (c *settleConn) fire() {
	c.mu.Lock()
	done := c.settled
	c.settled = true
	c.mu.Unlock()
	if !done {
		c.settle()
	}
}

// settle returns start-up memory to the operating system.
func settle() {
	debug.FreeOSMemory()
	trimProgram()
}
