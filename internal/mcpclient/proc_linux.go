package mcpclient

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
)

// groupAlive reports whether a process of the server's group is left that
// is not a zombie: a zombie whose parent has gone waits for init to reap
// it, which in a container may never happen, yet it still answers
// kill(-pgid, 0).
func groupAlive(cmd *exec.Cmd) bool {
	pgid := []byte(strconv.Itoa(cmd.Process.Pid))
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		if n := e.Name(); n[0] < '0' || n[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold anything.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) >= 3 && bytes.Equal(f[2], pgid) && f[0][0] != 'Z' && f[0][0] != 'X' {
			return true
		}
	}
	return false
}
