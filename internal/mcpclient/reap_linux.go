package mcpclient

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// What a server leaves behind on Linux. The process group and the family
// noted before the server is stopped (descendants) end what is still
// attached to the server. A process that left both, by calling setsid
// (or setpgid) and letting its parent exit before the server is stopped
// (a double fork), is an orphan: the kernel gives it to the nearest
// ancestor that is a child subreaper, else to init, where no family walk
// finds it. AdoptOrphans makes etdi that subreaper, so every such orphan
// becomes etdi's own child, which etdi ends and reaps when the server is
// stopped.

var adopt struct {
	sync.Mutex
	on bool // this process is a child subreaper, set by AdoptOrphans
	// live are the servers started and not yet stopped, by pid.
	live map[int]bool
	// inherited are the children this process already had when it became
	// a subreaper (pid to start time): a shell that ran etdi with exec
	// leaves its background jobs to it. They are nobody's orphans and are
	// never ended.
	inherited map[int]string
}

// AdoptOrphans makes this process the child subreaper of everything it
// starts (prctl PR_SET_CHILD_SUBREAPER), so that a process a server
// detaches (setsid and a double fork) is given to this process rather
// than to init, and is ended and reaped when the server is stopped. Call
// it once, before the first server starts, in a program whose only
// children running beside a server are the servers it starts: stopping
// the last running server ends every child of the program that is not a
// server it started nor a child it already had when it called AdoptOrphans
// (etdi's own commands wait for the other programs they run before
// starting a server). It reports whether the kernel took it.
func AdoptOrphans() bool {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return false
	}
	self := os.Getpid()
	inherited := map[int]string{}
	for pid, p := range scanProcs() {
		if p.ppid == self {
			inherited[pid] = p.start
		}
	}
	adopt.Lock()
	adopt.on = true
	adopt.inherited = inherited
	adopt.Unlock()
	return true
}

// tree is a started server, as the registry of live servers knows it.
type tree struct{ pid int }

// watch registers a started server.
func watch(cmd *exec.Cmd) *tree {
	adopt.Lock()
	defer adopt.Unlock()
	if adopt.live == nil {
		adopt.live = map[int]bool{}
	}
	adopt.live[cmd.Process.Pid] = true
	return &tree{pid: cmd.Process.Pid}
}

// forget removes the server from the registry once it has been reaped.
func (t *tree) forget() {
	adopt.Lock()
	delete(adopt.live, t.pid)
	adopt.Unlock()
}

// procInfo is a process as /proc/pid/stat shows it.
type procInfo struct {
	ppid, pgid int
	zombie     bool
	start      string
}

// scanProcs reads every process of /proc.
func scanProcs() map[int]procInfo {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	ps := make(map[int]procInfo, len(entries))
	for _, e := range entries {
		n := e.Name()
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		f := procStat(n)
		if len(f) < 20 || f[0][0] == 'X' {
			continue
		}
		pid, _ := strconv.Atoi(n)
		ppid, _ := strconv.Atoi(string(f[1]))
		pgid, _ := strconv.Atoi(string(f[2]))
		ps[pid] = procInfo{ppid: ppid, pgid: pgid, zombie: f[0][0] == 'Z', start: string(f[19])}
	}
	return ps
}

// strays returns the children of this process that the server t left
// behind: those in its process group, and, when t is the last server
// running and this process adopts orphans, every child that is not a
// server (whatever group or session it moved to). Zombies are included,
// to be reaped.
func (t *tree) strays(ps map[int]procInfo) []int {
	self := os.Getpid()
	adopt.Lock()
	all := adopt.on && len(adopt.live) <= 1
	live := make(map[int]bool, len(adopt.live))
	for p := range adopt.live {
		live[p] = true
	}
	inherited := adopt.inherited
	adopt.Unlock()
	var out []int
	for pid, p := range ps {
		if p.ppid != self || live[pid] {
			continue
		}
		if start, ok := inherited[pid]; ok && start == p.start {
			continue // a child etdi was given at its start, not an orphan
		}
		if p.pgid == t.pid || all {
			out = append(out, pid)
		}
	}
	return out
}

// end ends and reaps what the server left behind as children of this
// process (orphans adopted as subreaper), with everything they started,
// until deadline. It runs after the server's group and noted family were
// killed, so each round finds the orphans those left.
func (t *tree) end(deadline time.Time) {
	for {
		ps := scanProcs()
		strays := t.strays(ps)
		if len(strays) == 0 {
			return
		}
		root := make(map[int]bool, len(strays))
		for _, s := range strays {
			root[s] = true
		}
		// Everything under a stray, by its parents: killed in the same
		// round, so none of it is left to start more.
		for pid, p := range ps {
			if p.zombie {
				continue
			}
			for q, hops := pid, 0; q > 1 && hops < 64; q, hops = ps[q].ppid, hops+1 {
				if root[q] {
					killIfSame(pid, p.start)
					break
				}
			}
		}
		// The strays are this process's children: reap those that ended.
		for _, s := range strays {
			var ws unix.WaitStatus
			unix.Wait4(s, &ws, unix.WNOHANG, nil)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killIfSame sends SIGKILL to pid if it is still the process that started
// at start (a pid is not reused while its process is a zombie, but one
// that has been reaped may be).
func killIfSame(pid int, start string) {
	f := procStat(strconv.Itoa(pid))
	if len(f) >= 20 && string(f[19]) == start && f[0][0] != 'Z' {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
