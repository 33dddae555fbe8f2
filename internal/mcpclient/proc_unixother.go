//go:build unix && !linux && !darwin

package mcpclient

import (
	"os/exec"
	"syscall"
)

// groupAlive reports whether a process of the server's group is left
// (zombies count until they are reaped).
func groupAlive(cmd *exec.Cmd) bool { return syscall.Kill(-cmd.Process.Pid, 0) == nil }

// proc is a process a sweep found; descendants finds none here.
type proc struct{}

func descendants(pid int) []proc { return nil }

func killEscaped(ps []proc) {}

// diesWithParent: only Linux can have the kernel end a child with its
// parent.
func diesWithParent(a *syscall.SysProcAttr) {}
