//go:build !unix

package mcpclient

import (
	"context"
	"os/exec"
)

// Without process groups (Windows, ...), the server process itself is
// ended; processes it started may outlive it. It shares etdi's console,
// so an interrupt reaches it as it reaches etdi.

func inOwnGroup(cmd *exec.Cmd) {}

func terminateGroup(cmd *exec.Cmd) { cmd.Process.Kill() }

func killGroup(cmd *exec.Cmd) { cmd.Process.Kill() }

func groupAlive(cmd *exec.Cmd) bool { return false }

func onInterrupt(cancel context.CancelFunc) func() { return func() {} }

// proc is a process a sweep found; descendants finds none here.
type proc struct{}

func descendants(pid int) []proc { return nil }

func killEscaped(ps []proc) {}
