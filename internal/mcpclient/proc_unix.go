//go:build unix

package mcpclient

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// inOwnGroup starts the server as the leader of a new process group, so
// that everything it starts can be ended with it.
func inOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	diesWithParent(cmd.SysProcAttr)
}

// terminateGroup asks every process of the server's group to end.
func terminateGroup(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }

// killGroup ends every process of the server's group.
func killGroup(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// onInterrupt cancels the fetch when etdi is interrupted (SIGINT, SIGTERM,
// SIGHUP): in its own group, the server no longer gets the terminal's
// Ctrl-C, so etdi ends it before ending itself. The returned function
// stops watching and, if a signal came, delivers it to etdi again.
// Signals etdi was started ignoring stay ignored.
func onInterrupt(cancel context.CancelFunc) func() {
	var sigs []os.Signal
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	if len(sigs) == 0 {
		return func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done, finished := make(chan struct{}), make(chan struct{})
	var got os.Signal
	go func() {
		defer close(finished)
		select {
		case got = <-ch:
			cancel()
		case <-done:
		}
	}()
	return func() {
		close(done)
		<-finished
		signal.Stop(ch)
		if s, ok := got.(syscall.Signal); ok {
			// Delivering a signal to oneself is asynchronous: wait for it
			// to take effect, or etdi would go on to exit with its own
			// code before the signal ends it.
			signal.Reset(s)
			syscall.Kill(os.Getpid(), s)
			time.Sleep(5 * time.Second)
		}
	}
}
