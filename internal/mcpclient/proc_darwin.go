package mcpclient

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// groupAlive reports whether a process of the server's group is left
// (zombies count until they are reaped).
func groupAlive(cmd *exec.Cmd) bool { return syscall.Kill(-cmd.Process.Pid, 0) == nil }

// proc is a process found in the kernel's process table, with its start
// time, so a reused pid is never taken for it.
type proc struct {
	pid   int
	start unix.Timeval
}

// szomb is the p_stat of a zombie (sys/proc.h).
const szomb = 5

// processes reads the kernel's process table (sysctl kern.proc.all).
func processes() []unix.KinfoProc {
	ps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	return ps
}

// descendants returns every live process whose parents lead to pid,
// whatever its process group or session, as on Linux: a server's child
// that called setsid has left the group that killGroup ends, but not the
// family. (macOS has no child subreaper: one whose parent already exited
// is init's, and beyond reach.)
func descendants(pid int) []proc {
	parent := map[int]int{}
	start := map[int]unix.Timeval{}
	for _, p := range processes() {
		if p.Proc.P_stat == szomb {
			continue
		}
		parent[int(p.Proc.P_pid)] = int(p.Eproc.Ppid)
		start[int(p.Proc.P_pid)] = p.Proc.P_starttime
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
	if len(ps) == 0 {
		return
	}
	now := map[int]unix.Timeval{}
	for _, p := range processes() {
		if p.Proc.P_stat != szomb {
			now[int(p.Proc.P_pid)] = p.Proc.P_starttime
		}
	}
	for _, p := range ps {
		if st, ok := now[p.pid]; ok && st == p.start {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}

// diesWithParent: only Linux can have the kernel end a child with its
// parent.
func diesWithParent(a *syscall.SysProcAttr) {}
