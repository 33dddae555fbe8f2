package mcpclient

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
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

// proc is a process found under /proc, with its start time (clock ticks
// since boot), so a reused pid is never taken for it.
type proc struct {
	pid   int
	start string
}

// procStat returns the fields of /proc/pid/stat after the command name:
// state, ppid, pgrp, session, ... (starttime is index 19).
func procStat(pid string) [][]byte {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return bytes.Fields(stat[i+1:])
}

// descendants returns every live process whose parents lead to pid,
// whatever its process group or session: a server's child that called
// setsid has left the group that killGroup ends, but not the family.
func descendants(pid int) []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	start := map[int]string{}
	for _, e := range entries {
		n := e.Name()
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		f := procStat(n)
		if len(f) < 20 || f[0][0] == 'Z' || f[0][0] == 'X' {
			continue
		}
		p, _ := strconv.Atoi(n)
		pp, _ := strconv.Atoi(string(f[1]))
		parent[p], start[p] = pp, string(f[19])
	}
	var out []proc
	for p := range parent {
		for q, hops := parent[p], 0; q > 1 && hops < 64; q, hops = parent[q], hops+1 {
			if q == pid {
				out = append(out, proc{p, start[p]})
				break
			}
		}
	}
	return out
}

// killEscaped ends the processes of ps that still run as themselves.
func killEscaped(ps []proc) {
	for _, p := range ps {
		f := procStat(strconv.Itoa(p.pid))
		if len(f) >= 20 && string(f[19]) == p.start && f[0][0] != 'Z' {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}

// diesWithParent has the kernel end the server when etdi ends, however
// (kill -9 included): in its own process group it gets no signal meant
// for etdi's, and a server that ignores the end of its stdin would
// outlive etdi. What the server starts itself is beyond this.
func diesWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
