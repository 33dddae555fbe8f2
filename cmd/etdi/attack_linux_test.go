package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Attack: etdi run is killed with SIGKILL (the OOM killer, a host that
// kills its children hard, a crash). The server runs in a process group
// of its own, so nothing of etdi's reaches it, and no parent-death signal
// is asked for: a server that ignores the end of its stdin and SIGHUP runs
// on for ever after the gate is gone, unsupervised. Breaks: the server
// process group is always reaped.
// A Go test: it waits for the server's pid file, kills the gate, and
// waits for the server's end.
func TestAttackServerOutlivesKilledGate(t *testing.T) {
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	pidFile := filepath.Join(p.dir, "server.pid")
	cmd := p.gatedCmd(nil, []string{"--name", "stubborn"}, "sh", "-c", `trap "" HUP TERM INT PIPE; echo $$ > `+pidFile+`; exec sleep 300`)
	in, _ := cmd.StdinPipe()
	defer in.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(2 * time.Minute); pid == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 1 {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	if pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the server did not start")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// The server's end is the event waited for; the deadline is one only a
	// server that outlives the gate reaches, however loaded the machine.
	// A zombie is ended: it waits for init to collect it.
	for deadline := time.Now().Add(2 * time.Minute); syscall.Kill(pid, 0) == nil && !isZombie(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL) // the test's own server process
			t.Fatalf("the server (pid %d) still runs after etdi run was killed", pid)
		}
	}
}
