//go:build !unix

package mcpclient

import "os/exec"

// Without process groups (Windows, ...), the server process itself is
// ended; processes it started may outlive it.

func inOwnGroup(cmd *exec.Cmd) {}

func terminateGroup(cmd *exec.Cmd) { cmd.Process.Kill() }

func killGroup(cmd *exec.Cmd) { cmd.Process.Kill() }

func groupAlive(cmd *exec.Cmd) bool { return false }
