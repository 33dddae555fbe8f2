//go:build linux

package mcpclient

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/mcpclient/hostile"
)

// A grandchild that holds stderr open neither survives the fetch nor fails
// a listing that succeeded.
func TestGrandchildEnded(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	l, err := hostileStdio(t, hostile.Grandchild, Options{}, hostile.PIDFile+"="+pidFile)
	if err != nil || len(l.Tools) != 2 {
		t.Fatalf("listing: %v %+v", err, l)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(b))
	// Ended (possibly a zombie until init reaps it), not running.
	for i := 0; i < 200 && running(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if running(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("grandchild %d survived the fetch", pid)
	}
}

// running reports whether process pid exists and is not a zombie.
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// A grandchild that left the server's process group with setsid is ended
// too: etdi notes the server's whole family before it stops it.
func TestSetsidGrandchildEnded(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	l, err := hostileStdio(t, hostile.GrandchildSetsid, Options{}, hostile.PIDFile+"="+pidFile)
	if err != nil || len(l.Tools) != 2 {
		t.Fatalf("listing: %v %+v", err, l)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(b))
	for i := 0; i < 200 && running(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if running(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("grandchild %d in its own session survived the fetch", pid)
	}
}
