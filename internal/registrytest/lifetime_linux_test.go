package registrytest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHelperSharedRegistry is not a test: run by
// TestNothingOutlivesTheTestBinary as a test binary of its own, it starts
// the shared registry, prints its processes and directories and waits to
// be killed.
func TestHelperSharedRegistry(t *testing.T) {
	if os.Getenv("REGISTRYTEST_HELPER") != "1" {
		t.Skip("run by TestNothingOutlivesTheTestBinary")
	}
	r := Shared(t)
	fmt.Printf("pids %d %d\ndirs %s %s\n", r.cmd.Process.Pid, r.pg.cmd.Process.Pid, r.LogDir, r.pg.dir)
	select {}
}

// TestNothingOutlivesTheTestBinary kills a test binary running the shared
// registry, as a test timeout or an interrupted run does, without any
// cleanup: the registry and PostgreSQL end with it, and the next start
// of a registry removes their directories.
func TestNothingOutlivesTheTestBinary(t *testing.T) {
	need(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSharedRegistry$", "-test.v")
	cmd.Env = append(os.Environ(), "REGISTRYTEST_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pids []int
	var dirs []string
	sc := bufio.NewScanner(out)
	for (len(pids) == 0 || len(dirs) == 0) && sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "pids":
			for _, s := range f[1:] {
				p, err := strconv.Atoi(s)
				if err != nil {
					t.Fatal(err)
				}
				pids = append(pids, p)
			}
		case len(f) == 3 && f[0] == "dirs":
			dirs = f[1:]
		}
	}
	if len(pids) != 2 || len(dirs) != 2 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the helper printed pids %v, dirs %v", pids, dirs)
	}
	for _, p := range pids {
		if gone(p) {
			t.Fatalf("process %d is not running while its test binary is", p)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// The kernel signals the children when the binary's thread ends; they
	// end soon after (PostgreSQL's immediate shutdown included). Wait for
	// it, up to a bound far above what it takes.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, p := range pids {
		for !gone(p) {
			select {
			case <-ctx.Done():
				t.Fatalf("process %d outlived its test binary", p)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("%s: %v (the binary was killed: nothing should have removed it yet)", d, err)
		}
		if !strings.HasPrefix(filepath.Base(d), fmt.Sprintf("etdi-registrytest-%d-", cmd.Process.Pid)) {
			t.Fatalf("%s is not named after its test binary's pid %d", d, cmd.Process.Pid)
		}
	}
	// The directory of a test binary still running (this one's parent,
	// the go command) stays.
	live, err := os.MkdirTemp("", fmt.Sprintf("etdi-registrytest-%d-", os.Getppid()))
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(live)
	sweep()
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Fatalf("%s: still there after a sweep (%v)", d, err)
		}
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("the sweep removed the directory of a running process: %v", err)
	}
}

// gone says whether the process pid has ended: it does not exist, or it
// is a zombie no one has reaped yet.
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// pid (comm) STATE ...: comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z'
}
