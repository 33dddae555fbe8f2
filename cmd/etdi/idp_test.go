package main

import (
	"bufio"
	"fmt"
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
	port := freePort(t)
	cmd := exec.Command("node", filepath.Join(idpDir, "server.mjs"))
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	t.Cleanup(stop)
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") {
				ready <- strings.TrimPrefix(sc.Text(), "ready ")
			}
		}
	}()
	select {
	case iss := <-ready:
		return iss, stop
	case <-time.After(30 * time.Second):
		t.Fatal("oidc-provider did not start")
	}
	return "", stop
}
