package registrytest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"
	"syscall"
)

// supported says whether the fixture runs here, and why not.
func supported() (bool, string) { return true, "" }

// The processes of the fixture are started from one goroutine locked to
// its own thread for the life of the test binary, each with a parent-death
// signal: the kernel sends it when the thread that started the process
// ends, which for this thread is when the test binary ends, however it
// ends (a panic, a timeout, a kill). So neither the registry nor
// PostgreSQL outlives the tests that started them, even when no cleanup
// runs. (Go ends a thread only when a goroutine locked to it returns.)
var spawnc = make(chan spawnReq)

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func init() {
	go func() {
		runtime.LockOSThread()
		for r := range spawnc {
			r.done <- r.cmd.Start()
		}
	}()
}

// runAs is a user other than the current one that a process runs as.
type runAs struct{ uid, gid uint32 }

// spawn starts cmd as its own process group, with sig as its parent-death
// signal, as the user as when it is not nil.
func spawn(cmd *exec.Cmd, sig syscall.Signal, as *runAs) error {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
	if as != nil {
		attr.Credential = &syscall.Credential{Uid: as.uid, Gid: as.gid, NoSetGroups: true}
	}
	cmd.SysProcAttr = attr
	done := make(chan error, 1)
	spawnc <- spawnReq{cmd, done}
	return <-done
}

// signalGroup sends sig to the process group of the started cmd.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, sig)
	}
}

// postgresUser is the user PostgreSQL runs as: nil (the current user)
// unless the tests run as root, which PostgreSQL refuses to run as; then
// the user postgres of Debian's packages, else nobody.
func postgresUser() (*runAs, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &runAs{uint32(uid), uint32(gid)}, nil
	}
	return nil, fmt.Errorf("running as root, and there is neither a user postgres nor nobody to run PostgreSQL as (it refuses to run as root)")
}

// chown gives path to the user as (nothing when as is nil).
func chown(path string, as *runAs) error {
	if as == nil {
		return nil
	}
	return os.Chown(path, int(as.uid), int(as.gid))
}

// lchown gives the symbolic link path to the user as (nothing when as is
// nil).
func lchown(path string, as *runAs) error {
	if as == nil {
		return nil
	}
	return os.Lchown(path, int(as.uid), int(as.gid))
}

// alive says whether the process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
