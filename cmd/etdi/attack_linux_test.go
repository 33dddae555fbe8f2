package main

import (
	"fmt"
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
	for deadline := time.Now().Add(10 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
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
	time.Sleep(time.Second)
	// A zombie is ended: it waits for init to collect it.
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(stat), ") Z ") {
		return
	}
	if syscall.Kill(pid, 0) == nil {
		syscall.Kill(pid, syscall.SIGKILL) // the test's own server process
		t.Fatalf("the server (pid %d) still runs after etdi run was killed", pid)
	}
}
