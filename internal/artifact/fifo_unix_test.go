//go:build unix

package artifact

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A FIFO in the place of a script or lockfile is not opened for a
// blocking read.
func TestResolveFIFO(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"server.js", "package-lock.json", "uv.lock"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
			t.Skip("no FIFO:", err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, argv := range [][]string{{"node", "server.js"}, {"npx", "srv"}, {"uvx", "srv==1"}} {
			r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: dir, Env: []string{"PATH=", "HOME=" + dir}})
			unresolved(t, argv, r, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Resolve blocked on a FIFO")
	}
}

// A FIFO in the place of an .npmrc is not read as an empty (harmless)
// configuration, nor opened for a blocking read.
func TestNPMRCFIFO(t *testing.T) {
	proj, home, _ := npmProject(t)
	if err := syscall.Mkfifo(filepath.Join(proj, ".npmrc"), 0o644); err != nil {
		t.Skip("no FIFO:", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		argv := []string{"npx", "srv@1.0.0"}
		r, err := Resolve(context.Background(), Launch{Argv: argv, Dir: proj, Env: []string{"PATH=", "HOME=" + home}})
		unresolved(t, argv, r, err, "cannot read the project's .npmrc", "not a regular file")
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Resolve blocked on a FIFO")
	}
}
