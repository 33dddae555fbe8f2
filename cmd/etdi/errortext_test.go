package main

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestCLIUnknownSubcommand: an unknown command or subcommand is a usage
// error (exit 2) that suggests the nearest one; a group alone prints its
// help.
func TestCLIUnknownSubcommand(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"chek"}, exitUsage, `unknown command "chek" for "etdi"; did you mean check?`},
		{[]string{"pin", "lst"}, exitUsage, `unknown command "lst" for "etdi pin"; did you mean list?`},
		{[]string{"trust", "nothing-like-it"}, exitUsage, `unknown command "nothing-like-it" for "etdi trust" (the commands: etdi trust --help)`},
		{[]string{"pin"}, exitOK, "Available Commands:"},
		{[]string{"pin", "list", "--help"}, exitOK, "Usage:"},
	} {
		r := runEtdi(t, dir, nil, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.want) || strings.Contains(r.stderr, `\n`) || strings.Contains(r.stderr, `\t`) {
			t.Errorf("etdi %v: exit %d (want %d), want %q:\n%s%s", tc.args, r.code, tc.code, tc.want, r.stdout, r.stderr)
		}
	}
}

// TestCLIListErrorsPrintAsLines: the paths searched for a host
// configuration print one a line, not as one line with \n in it.
func TestCLIListErrorsPrintAsLines(t *testing.T) {
	dir := t.TempDir()
	r := runEtdi(t, dir, nil, "check", "--config", "auto", "--trust", "none.json")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code == 0 || len(lines) < 10 || lines[0] != "etdi: error: no MCP host configuration found; searched:" || strings.Contains(r.stderr, `\n`) {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	if !strings.HasPrefix(lines[1], "  "+dir) {
		t.Fatalf("first path %q", lines[1])
	}
}

// TestListErrorEscapesEachItem: an item of a list error (a path, a
// name from a database) is escaped on its own line, so that a newline or
// terminal control in it cannot forge a line.
func TestListErrorEscapesEachItem(t *testing.T) {
	var b bytes.Buffer
	err := &linesError{errors.New("2 things"), []string{"one", "two\netdi: error: forged\x1b[2J"}}
	sayError(&b, &wrapped{err})
	want := "etdi: error: outer: 2 things:\n  one\n  two\\netdi: error: forged\\u{1B}[2J\n"
	if b.String() != want {
		t.Fatalf("got %q\nwant %q", b.String(), want)
	}
	b.Reset()
	sayError(&b, errors.New("plain\nline"))
	if b.String() != "etdi: error: plain\\nline\n" {
		t.Fatalf("plain error: %q", b.String())
	}
}

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "outer: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

// TestCLIManifestGivenForTools: a manifest or a bundle given to --tools
// is a usage error that says what to run instead, as verify says of a
// manifest given as a bundle.
func TestCLIManifestGivenForTools(t *testing.T) {
	p := newPinEnv(t)
	p.ok("sign", "--key", "acme.key", "--sequence", "1", "--out", "v1.etdi.json", "v1.manifest.json")
	for _, cmd := range [][]string{{"check"}, {"pin", "approve"}} {
		args := append(append([]string{}, cmd...), "--trust", "trust.json", "--pins", "pins.db", "--tools")
		p.expect(exitUsage, "v1.manifest.json is a manifest, not a tools/list result: sign it (etdi sign --key KEY --out BUNDLE v1.manifest.json)", append(args, "v1.manifest.json")...)
		p.expect(exitUsage, "v1.etdi.json is a signed bundle, not a tools/list result: pass it with --bundle v1.etdi.json", append(args, "v1.etdi.json")...)
	}
	// A tools/list is not flagged.
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	p.expect(exitApproval, "", "check", "--trust", "trust.json", "--pins", "pins.db", "--name", "files", "--tools", "live-ok.json")
}

// TestCLIConnectionRefused: a refused connection names the address and
// what to check, never the URL's query.
func TestCLIConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	r := p.run("check", "--trust", "trust.json", "--pins", "pins.db", "--url", "http://127.0.0.1:"+port+"/mcp?token=s3cret-value")
	if r.code != exitError || !strings.Contains(r.stdout+r.stderr, "connection refused by http://127.0.0.1:"+port+": nothing listens there; check that the server is running") ||
		strings.Contains(r.stdout+r.stderr, "s3cret-value") {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}
