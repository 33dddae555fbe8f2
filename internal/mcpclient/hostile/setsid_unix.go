//go:build unix

package hostile

import (
	"os/exec"
	"syscall"
)

func setsid(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
