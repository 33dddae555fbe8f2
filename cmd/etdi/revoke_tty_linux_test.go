package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the controller side and the terminal
// a program reads as its standard input.
func openPTY(t *testing.T) (ctl, tty *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ctl.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ctl.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close(); tty.Close() })
	return ctl, tty
}

// TestCLIRevokeAsksOnATerminal: on a terminal pin revoke asks, and
// revokes only on y.
func TestCLIRevokeAsksOnATerminal(t *testing.T) {
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	p.ok(append([]string{"pin", "approve"}, append(pinArgs, "--name", "files", "--tools", "live-ok.json", "--tool", "get_weather", "--tool", "get_forecast")...)...)
	revoke := func(answer string) result {
		ctl, tty := openPTY(t)
		cmd := exec.Command(etdiBin, "pin", "revoke", "--pins", "pins.db", "unsigned:files/get_weather", "--reason", "advisory 7")
		cmd.Dir = p.dir
		cmd.Env = []string{"HOME=" + p.dir, "XDG_CONFIG_HOME=" + filepath.Join(p.dir, ".config"), "PATH=" + os.Getenv("PATH")}
		var so, se bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, &so, &se
		if _, err := ctl.WriteString(answer + "\n"); err != nil {
			t.Fatal(err)
		}
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{code, so.String(), se.String()}
	}
	r := revoke("n")
	if r.code != exitError || !strings.Contains(r.stderr, "revoke unsigned:files/get_weather? ") || !strings.Contains(r.stderr, "not revoked") {
		t.Fatalf("answer n: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	p.expect(0, "", "check", "--trust", "trust.json", "--pins", "pins.db", "--name", "files", "--tools", "live-ok.json")
	r = revoke("y")
	if r.code != 0 || !strings.Contains(r.stdout, "revoked unsigned:files/get_weather") {
		t.Fatalf("answer y: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	p.expect(exitRevoked, "advisory 7", "check", "--trust", "trust.json", "--pins", "pins.db", "--name", "files", "--tools", "live-ok.json")
}
