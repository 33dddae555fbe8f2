package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	mcpDir     string // testdata/mcp, absolute
	fixtureJS  string
	nodeBinDir string
	mcpNpm     *npmFolder
)

func init() {
	mcpDir, _ = filepath.Abs("../../testdata/mcp")
	fixtureJS = filepath.Join(mcpDir, "fixture-server.mjs")
	nodeBinDir = filepath.Join(mcpDir, "node_modules", ".bin")
	mcpNpm = &npmFolder{dir: mcpDir, marker: filepath.Join("node_modules", ".bin", "mcp-server-everything")}
}

// npmFolder is a test fixture folder whose npm packages are installed
// (npm ci, from its lockfile) at most once per test run.
type npmFolder struct {
	dir    string
	marker string // a path, relative to dir, that exists once installed
	once   sync.Once
	err    error
}

func (f *npmFolder) need(t testing.TB) {
	t.Helper()
	if err := f.ensure(); err != nil {
		t.Fatal(err)
	}
}

// ensure installs the folder's packages unless they are installed.
func (f *npmFolder) ensure() error {
	f.once.Do(func() {
		if _, err := os.Stat(filepath.Join(f.dir, f.marker)); err == nil {
			return
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = f.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			f.err = fmt.Errorf("npm ci in %s: %v\n%s", f.dir, err, out)
		}
	})
	return f.err
}

// needNode installs the npm packages of testdata/mcp (real MCP servers and
// the SDK for the fixture server).
func needNode(t testing.TB) { mcpNpm.need(t) }

// liveEnv is a client with a trust policy for acme and a bundle matching
// the fixture server's tools.
func liveEnv(t *testing.T) *pinEnv {
	needNode(t)
	p := newPinEnv(t)
	p.ok("sign", "--key", "acme.key", "--out", "w.etdi.json", "v1.manifest.json")
	return p
}

// fixture returns the arguments that start the fixture server, with a
// marker argument to find leftover processes.
func fixture(marker string) []string {
	return []string{"--server", "--", "env", "node", fixtureJS, marker}
}

// liveCheck runs etdi check on the fixture with environment env.
func (p *pinEnv) liveCheck(env []string, extra ...string) result {
	p.t.Helper()
	// Node.js may take many seconds to start on a loaded machine: the
	// deadlines are ones no loaded machine reaches; a test of a deadline
	// sets its own after these.
	args := append([]string{"check", "--trust", "trust.json", "--pins", "pins.db", "--start-timeout", "2m", "--timeout", "5m"}, extra...)
	return runEtdi(p.t, p.dir, append(env, "PATH="+os.Getenv("PATH")), args...)
}

// freePort returns a TCP port free on 127.0.0.1.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startHTTPEverything starts server-everything over Streamable HTTP on
// 127.0.0.1 and returns its URL.
func startHTTPEverything(t testing.TB) string {
	needNode(t)
	url, stop, err := httpEverything()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url
}

// httpEverything starts server-everything over Streamable HTTP on
// 127.0.0.1 and returns its URL and the function that stops it.
func httpEverything() (url string, stop func(), err error) {
	if err := mcpNpm.ensure(); err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", filepath.Join(nodeBinDir, "mcp-server-everything"), "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() { cmd.Process.Kill(); cmd.Wait() }
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on port") {
				ready <- true
			}
		}
	}()
	// A start limit no loaded machine reaches: it only keeps a server
	// that never starts from hanging the tests.
	select {
	case <-ready:
	case <-time.After(2 * time.Minute):
		stop()
		return "", nil, fmt.Errorf("server-everything (HTTP) did not start")
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port), stop, nil
}

// The answers to check --approve on a terminal are applied item by item:
// yes to the first tool, no to the second, yes to the prompt, the
// resources and the template the server lists as well. It stays a Go
// test: it answers each prompt on a terminal as it appears, which a
// script cannot. (Without a terminal: live_approve_needs_terminal.)
func TestLiveInteractiveApproval(t *testing.T) {
	p := liveEnv(t)
	r := startPty(t, p.dir, "check", "--trust", "trust.json", "--pins", "pins.db", "--start-timeout", "2m", "--approve",
		"--bundle", "w.etdi.json", "--server", "--", "node", fixtureJS, "m4")
	const asked = "? [y]es, [N]o"
	for i, answer := range []string{"y", "n", "y", "y", "y", "y"} {
		r.waitFor(t, asked, i+1)
		fmt.Fprint(r.stdin, answer+"\n")
	}
	r.wait(t)
	out := r.output()
	if !strings.Contains(out, "approve tool get_weather? [y]es, [N]o") || !strings.Contains(out, "approve tool get_forecast? [y]es, [N]o") {
		t.Fatalf("no prompts:\n%s", out)
	}
	for _, prompt := range []string{"approve prompt weather_report? ", "approve resource weather://cities? ", "approve resource template weather://city/{name}? "} {
		if !strings.Contains(out, prompt) {
			t.Fatalf("no prompt %q:\n%s", prompt, out)
		}
	}
	if strings.Contains(out, "not offered") {
		t.Fatalf("an answer named an item approval cannot find:\n%s", out)
	}
	l := p.ok("pin", "list", "--pins", "pins.db", "--json")
	for _, want := range []string{"acme:weather/get_weather", "acme:weather/prompt:weather_report", "acme:weather/resource:weather://cities",
		"acme:weather/resource:weather://stations", "acme:weather/resourceTemplate:weather://city/{name}"} {
		if !strings.Contains(l.stdout, `"`+want+`"`) {
			t.Fatalf("interactive answers not applied: no %s in %s\n%s", want, l.stdout, out)
		}
	}
	if strings.Contains(l.stdout, "get_forecast") {
		t.Fatalf("get_forecast approved although answered no: %s", l.stdout)
	}
}
