package main

import (
	"context"
	"errors"
	"testing"
)

// fakeConn is a host connection whose writes fail while failing is set.
type fakeConn struct{ failing bool }

func (c *fakeConn) Read(context.Context) ([]byte, error) { return nil, errors.New("no input") }
func (c *fakeConn) Close() error                         { return nil }
func (c *fakeConn) Write(context.Context, []byte) error {
	if c.failing {
		return errors.New("host gone")
	}
	return nil
}

// TestSettleAfterFirstAnswer: start-up memory is given back once the
// host has received an answer and the session went quiet, never before
// and only once.
func TestSettleAfterFirstAnswer(t *testing.T) {
	t.Run("failed write", func(t *testing.T) {
		c := &settleConn{Conn: &fakeConn{failing: true}, idle: 0, settle: func() { t.Error("settled before the host received anything") }}
		if err := c.Write(context.Background(), []byte(`{}`)); err == nil {
			t.Fatal("a failed write reported success")
		}
		if c.timer != nil {
			t.Error("a failed write armed the settling")
		}
	})
	t.Run("answers", func(t *testing.T) {
		settled := make(chan struct{}, 10)
		c := &settleConn{Conn: &fakeConn{}, idle: 0, settle: func() { settled <- struct{}{} }}
		for range 3 {
			if err := c.Write(context.Background(), []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		<-settled
		c.fire() // a timer that fires again
		if err := c.Write(context.Background(), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		done := c.settled
		c.mu.Unlock()
		if !done {
			t.Error("not marked settled")
		}
		if len(settled) != 0 {
			t.Errorf("settled %d more times", len(settled))
		}
	})
}
