package mcpclient

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/mcpclient/hostile"
)

// shServer is a stdio MCP server written in sh: before it reads anything
// it runs start (with $PIDFILE set) and waits for the pid file to be
// written; it then answers initialize and tools/list by their ids, and
// on the end of its stdin runs atEOF. A SIGTERM writes "term" to
// $MARKFILE.
const shServer = `
trap 'echo term >> "$MARKFILE"; exit 1' TERM
%START%
while [ -n "$PIDFILE" ] && [ ! -s "$PIDFILE" ]; do sleep 0.01; done
while IFS= read -r line; do
	id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\("[^"]*"\|[0-9][0-9]*\).*/\1/p')
	case "$line" in
	*'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"1"}}}\n' "$id" ;;
	*'"tools/list"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}\n' "$id" ;;
	esac
done
%EOF%
`

// Ways a server leaves a process behind that is not in its process group.
const (
	// setsidChild: a child that starts a session of its own; its parent,
	// the server, is alive until etdi stops it.
	setsidChild = `setsid sh -c 'echo $$ > "$PIDFILE"; exec sleep 300' </dev/null >/dev/null 2>&1 &`
	// doubleFork: a subshell starts that child and exits at once; the
	// child waits until it is an orphan (its parent's parent is no longer
	// the server) before it writes its pid, so no family walk from the
	// server finds it when etdi stops the server.
	doubleFork = `server=$$; ( setsid sh -c 'ppid() { cut -d" " -f4 /proc/$1/stat; }
		while [ "$(ppid "$(ppid $$)")" = "$0" ]; do sleep 0.01; done
		echo $$ > "$PIDFILE"; exec sleep 300' $server </dev/null >/dev/null 2>&1 & )`
)

// writeSh writes a shServer with start and atEOF to a file and returns
// the command, its pid file and its mark file.
func writeSh(t *testing.T, start, atEOF string) (argv []string, pidFile, markFile string, env []string) {
	t.Helper()
	dir := t.TempDir()
	script := strings.NewReplacer("%START%", start, "%EOF%", atEOF).Replace(shServer)
	path := filepath.Join(dir, "server.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile, markFile = filepath.Join(dir, "pid"), filepath.Join(dir, "mark")
	env = append(os.Environ(), "MARKFILE="+markFile)
	if start != "" {
		env = append(env, "PIDFILE="+pidFile)
	}
	return []string{"/bin/sh", path}, pidFile, markFile, env
}

// readPID reads the pid a server's detached process wrote.
func readPID(t *testing.T, pidFile string) int {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %q", b)
	}
	return pid
}

// gone waits, within a generous bound, for pid to end; a process still
// running then is killed and reported.
func gone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for running(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if running(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("%s (pid %d) outlived the server", what, pid)
	}
}

// parentOf returns the parent pid of pid, or 0.
func parentOf(pid int) int {
	f := procStat(strconv.Itoa(pid))
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(string(f[1]))
	return p
}

// A process a server detaches with setsid, and whose parent exits before
// the server is stopped, is adopted by etdi and ended with the server;
// so is one in a session of its own whose parent is the server.
func TestDetachedProcessesEnded(t *testing.T) {
	if !AdoptOrphans() {
		t.Fatal("PR_SET_CHILD_SUBREAPER refused")
	}
	for _, tc := range []struct{ name, start string }{
		{"setsid child", setsidChild},
		{"setsid after a double fork", doubleFork},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv, pidFile, _, env := writeSh(t, tc.start, "exit 0")
			l, err := Stdio(context.Background(), argv, env, "", Options{})
			if err != nil || len(l.Tools) != 1 {
				t.Fatalf("listing: %v %+v", err, l)
			}
			gone(t, readPID(t, pidFile), tc.name)
		})
	}
}

// The same through a session (the gate's transport, etdi run).
func TestDetachedProcessesEndedWithSession(t *testing.T) {
	if !AdoptOrphans() {
		t.Fatal("PR_SET_CHILD_SUBREAPER refused")
	}
	argv, pidFile, _, env := writeSh(t, doubleFork, "exit 0")
	s, err := StartStdio(argv, env, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	pid := readPIDWait(t, pidFile)
	if p := parentOf(pid); p != os.Getpid() {
		t.Fatalf("the orphan's parent is %d, not this process %d: not adopted", p, os.Getpid())
	}
	s.Close()
	gone(t, pid, "the double-forked process")
}

// readPIDWait waits for a server to write its pid file.
func readPIDWait(t *testing.T, pidFile string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			return readPID(t, pidFile)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the server wrote no pid file")
	return 0
}

// While another server runs, an orphan cannot be told apart from that
// server's own: stopping one server leaves it (and the other server)
// alone, and stopping the last ends it.
func TestOrphanKeptWhileAnotherServerRuns(t *testing.T) {
	if !AdoptOrphans() {
		t.Fatal("PR_SET_CHILD_SUBREAPER refused")
	}
	argv, pidFile, _, env := writeSh(t, doubleFork, "exit 0")
	s, err := StartStdio(argv, env, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pid := readPIDWait(t, pidFile)
	argv2, _, _, env2 := writeSh(t, "", "exit 0")
	if l, err := Stdio(context.Background(), argv2, env2, "", Options{}); err != nil || len(l.Tools) != 1 {
		t.Fatalf("listing: %v %+v", err, l)
	}
	if !running(pid) {
		t.Fatal("stopping one server ended a process of the server still running")
	}
	if !running(s.c.cmd.Process.Pid) {
		t.Fatal("stopping one server ended the other")
	}
	s.Close()
	gone(t, pid, "the orphan of the last server")
}

// A server that exits when its stdin closes is not signalled: it ends
// by itself within the grace period, and what it does at the end of its
// input runs.
func TestServerExitsCleanlyOnEOF(t *testing.T) {
	argv, _, markFile, env := writeSh(t, "", `echo clean > "$MARKFILE"; exit 0`)
	l, err := Stdio(context.Background(), argv, env, "", Options{})
	if err != nil || len(l.Tools) != 1 {
		t.Fatalf("listing: %v %+v", err, l)
	}
	b, err := os.ReadFile(markFile)
	if err != nil || string(b) != "clean\n" {
		t.Fatalf("mark file %q (%v): the server was signalled before it could exit", b, err)
	}
	s, err := StartStdio(argv, env, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(markFile)
	s.Close()
	if b, err := os.ReadFile(markFile); err != nil || string(b) != "clean\n" {
		t.Fatalf("session: mark file %q (%v)", b, err)
	}
	if st := s.c.cmd.ProcessState; st == nil || !st.Exited() || st.ExitCode() != 0 {
		t.Fatalf("session: server state %v, want exit status 0", st)
	}
}

// Ending what a server left never takes the server's own exit from the
// session: a server killed for ignoring SIGTERM is reported as killed.
func TestOrphanSweepLeavesServerExit(t *testing.T) {
	if !AdoptOrphans() {
		t.Fatal("PR_SET_CHILD_SUBREAPER refused")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := StartStdio([]string{exe}, append(os.Environ(), hostile.Env+"="+hostile.Deaf), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got := s.Exit(); got != "signal: killed" {
		t.Fatalf("server exit %q, want signal: killed", got)
	}
}

// A server that ignores the end of its stdin and, in its grace, starts a
// process in a session of its own is still its parent when it is
// stopped: that process ends with it, even while another server runs
// (etdi run --listen), where no orphan sweep ends it.
func TestSetsidInGraceEnded(t *testing.T) {
	if !AdoptOrphans() {
		t.Fatal("PR_SET_CHILD_SUBREAPER refused")
	}
	argv2, _, _, env2 := writeSh(t, "", "exit 0")
	other, err := StartStdio(argv2, env2, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	argv, _, _, env := writeSh(t, "", `setsid sh -c 'echo $$ > "$EOFPID"; exec sleep 300' </dev/null >/dev/null 2>&1 &
while :; do sleep 1; done`)
	eofPID := filepath.Join(t.TempDir(), "eofpid")
	s, err := StartStdio(argv, append(env, "EOFPID="+eofPID), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	gone(t, readPIDWait(t, eofPID), "the process started in the grace")
	if !running(other.c.cmd.Process.Pid) {
		t.Fatal("stopping one server ended the other")
	}
}
