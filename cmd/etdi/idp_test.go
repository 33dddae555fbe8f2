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
	idpDir string
	idpNpm *npmFolder
)

func init() {
	idpDir, _ = filepath.Abs("../../testdata/idp")
	idpNpm = &npmFolder{dir: idpDir, marker: filepath.Join("node_modules", "oidc-provider")}
}

// needIDPNode installs oidc-provider and jose in testdata/idp.
func needIDPNode(t testing.TB) { idpNpm.need(t) }

// startIDP runs the oidc-provider fixture on a free loopback port and
// returns its issuer URL and a function that stops it.
func startIDP(t *testing.T) (string, func()) {
	needIDPNode(t)
	iss, stop, err := launchIDP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return iss, stop
}

// launchIDP starts the oidc-provider fixture (testdata/idp/server.mjs,
// installed) on a free loopback port and returns its issuer URL once it
// says it is ready, and a function that stops it, safe to call twice.
// The deadline only fails a start that hung.
func launchIDP() (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", filepath.Join(idpDir, "server.mjs"))
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	var once sync.Once
	stop := func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if iss, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				ready <- iss
			}
		}
		close(ready)
	}()
	select {
	case iss, ok := <-ready:
		if !ok {
			stop()
			return "", nil, fmt.Errorf("oidc-provider exited before it was ready")
		}
		return iss, stop, nil
	case <-time.After(2 * time.Minute):
		stop()
		return "", nil, fmt.Errorf("oidc-provider did not start")
	}
}
