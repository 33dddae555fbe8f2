//go:build unix

package mcpclient

import (
	"os/exec"
	"syscall"
)

// inOwnGroup starts the server as the leader of a new process group, so
// that everything it starts can be ended with it.
func inOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminateGroup asks every process of the server's group to end.
func terminateGroup(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }

// killGroup ends every process of the server's group.
func killGroup(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
