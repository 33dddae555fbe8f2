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

// TestSettleAfterFirstAnswer: start-up memory is given back once, after
// the first message the host received, never before and never again.
func TestSettleAfterFirstAnswer(t *testing.T) {
	t.Run("failed write", func(t *testing.T) {
		c := &settleConn{Conn: &fakeConn{failing: true}, settle: func() { t.Error("settled before the host received anything") }}
		if err := c.Write(context.Background(), []byte(`{}`)); err == nil {
			t.Fatal("a failed write reported success")
		}
		probed := false
		c.once.Do(func() { probed = true })
		if !probed {
			t.Error("a failed write used up the settling")
		}
	})
	t.Run("answers", func(t *testing.T) {
		settled := make(chan struct{}, 10)
		c := &settleConn{Conn: &fakeConn{}, settle: func() { settled <- struct{}{} }}
		for range 3 {
			if err := c.Write(context.Background(), []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		<-settled
		c.once.Do(func() { t.Error("settling may run again") })
		if len(settled) != 0 {
			t.Errorf("settled %d more times", len(settled))
		}
	})
}
