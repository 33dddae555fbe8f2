package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// orphanServer is a stdio server in sh that first detaches a process from
// itself the way a daemon does (a subshell starts it with setsid and exits
// at once), waits until that process is an orphan and has written its pid
// to %PIDFILE%, and then answers initialize and tools/list.
const orphanServer = `server=$$; ( setsid sh -c 'ppid() { cut -d" " -f4 /proc/$1/stat; }
	while [ "$(ppid "$(ppid $$)")" = "$0" ]; do sleep 0.01; done
	echo $$ > "%PIDFILE%"; exec sleep 300' $server </dev/null >/dev/null 2>&1 & )
while [ ! -s "%PIDFILE%" ]; do sleep 0.01; done
while IFS= read -r line; do
	id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\("[^"]*"\|[0-9][0-9]*\).*/\1/p')
	case "$line" in
	*'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"1"}}}\n' "$id" ;;
	*'"tools/list"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}\n' "$id" ;;
	esac
done
`

// A process a server detaches (setsid after a double fork, so it is no
// longer in the server's group nor below it) does not outlive etdi check
// nor etdi run: etdi adopts it as child subreaper and ends it with the
// server.
func TestDetachedProcessEndsWithEtdi(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "trust.json"), []byte(`{"version":1,"unsigned":"warn","providers":[]}`), 0o644)
	pidFile := filepath.Join(dir, "pid")
	os.WriteFile(filepath.Join(dir, "server.sh"), []byte(strings.ReplaceAll(orphanServer, "%PIDFILE%", pidFile)), 0o644)
	orphan := func(t *testing.T) int {
		t.Helper()
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatalf("the server wrote no pid: %v", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("pid file %q", b)
		}
		return pid
	}
	t.Run("check", func(t *testing.T) {
		os.Remove(pidFile)
		r := runEtdi(t, dir, nil, "check", "--trust", "trust.json", "--pins", "pins.db", "--server", "--", "sh", "server.sh")
		if r.code != exitApproval {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		processGone(t, orphan(t))
	})
	t.Run("run", func(t *testing.T) {
		os.Remove(pidFile)
		cmd := exec.Command(etdiBin, "run", "--trust", "trust.json", "--pins", "pins.db", "--", "sh", "server.sh")
		cmd.Dir = dir
		// An orphan left alive may hold a pipe of etdi's: do not wait for
		// it longer than this after etdi exited.
		cmd.WaitDelay = 10 * time.Second
		cmd.Env = []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, ".config"), "PATH=" + os.Getenv("PATH")}
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`+"\n")
		line, _ := bufio.NewReader(out).ReadString('\n')
		in.Close() // the host is done: etdi stops the server and exits
		io.Copy(io.Discard, out)
		if err := cmd.Wait(); err != nil || !strings.Contains(line, `"serverInfo":{"name":"sh"`) {
			t.Fatalf("etdi run: %v, answer %q\n%s", err, line, stderr.String())
		}
		processGone(t, orphan(t))
	})
}

// processGone waits, within a generous bound, for pid to end (a zombie
// counts as ended); one still running then is killed and reported.
func processGone(t *testing.T, pid int) {
	t.Helper()
	alive := func() bool {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		i := strings.LastIndexByte(string(stat), ')')
		return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive() {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("process %d that the server detached outlived etdi", pid)
	}
}

// A shell that runs etdi with exec hands etdi its background jobs as
// children. They are not orphans of a server etdi started: they outlive
// etdi check, and a detached process of the server still does not.
func TestInheritedChildOutlivesEtdi(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "trust.json"), []byte(`{"version":1,"unsigned":"warn","providers":[]}`), 0o644)
	pidFile := filepath.Join(dir, "pid")
	os.WriteFile(filepath.Join(dir, "server.sh"), []byte(strings.ReplaceAll(orphanServer, "%PIDFILE%", pidFile)), 0o644)
	script := `sleep 300 & echo $! > job; exec "$0" check --trust trust.json --pins pins.db --server -- sh server.sh`
	cmd := exec.Command("sh", "-c", script, etdiBin)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, ".config"), "PATH=" + os.Getenv("PATH")}
	cmd.WaitDelay = 10 * time.Second
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != exitApproval {
		t.Fatalf("exit %d\n%s", code, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "job"))
	if err != nil {
		t.Fatal(err)
	}
	job, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	defer syscall.Kill(job, syscall.SIGKILL)
	// The job is now init's (or a subreaper's) child: alive means not
	// ended by etdi.
	if err := syscall.Kill(job, 0); err != nil {
		t.Fatalf("the shell's background job %d was ended with etdi: %v", job, err)
	}
	if stat, _ := os.ReadFile("/proc/" + strconv.Itoa(job) + "/stat"); strings.Contains(string(stat), ") Z ") {
		t.Fatalf("the shell's background job %d was ended with etdi", job)
	}
	b, _ = os.ReadFile(pidFile)
	orphan, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	processGone(t, orphan)
}
