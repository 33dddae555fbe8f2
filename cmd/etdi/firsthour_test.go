package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/keys"
)

// TestCLIFreshHome follows a new user in an empty home directory: the
// default configuration directory is created 0700 on first write, and
// ETDI_TRUST / ETDI_PINS move the defaults.
func TestCLIFreshHome(t *testing.T) {
	home := t.TempDir()
	run := func(env []string, args ...string) result {
		t.Helper()
		return runEtdi(t, home, append(append([]string{}, pwEnv...), env...), args...)
	}
	if r := run(nil, "key", "generate", "--out", "acme"); r.code != 0 {
		t.Fatalf("key generate: %d %s", r.code, r.stderr)
	}
	if r := run(nil, "trust", "add", "--provider", "acme", "--key", "acme.pub"); r.code != 0 {
		t.Fatalf("trust add in a fresh home: %d %s", r.code, r.stderr)
	}
	cfg := filepath.Join(home, ".config", "etdi")
	for _, d := range []string{cfg, filepath.Dir(cfg)} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v, mode %v (want 0700)", d, err, fi)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg, "trust.json")); err != nil {
		t.Fatal(err)
	}
	live, _ := os.ReadFile("demodata/live-ok.json")
	os.WriteFile(filepath.Join(home, "live.json"), live, 0o644)
	run(nil, "trust", "unsigned", "warn")
	if r := run(nil, "pin", "approve", "--tools", "live.json", "--name", "files"); r.code != 0 {
		t.Fatalf("pin approve with the default database: %d %s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(cfg, "pins.db")); err != nil {
		t.Fatalf("default pin database: %v", err)
	}

	// ETDI_TRUST and ETDI_PINS: the same commands now use other files.
	ci := []string{"ETDI_TRUST=" + filepath.Join(home, "ci", "trust.json"), "ETDI_PINS=" + filepath.Join(home, "ci", "pins.db")}
	if r := run(ci, "trust", "unsigned", "warn"); r.code != 0 {
		t.Fatalf("trust unsigned with ETDI_TRUST: %d %s", r.code, r.stderr)
	}
	if r := run(ci, "check", "--tools", "live.json", "--name", "files"); r.code != 13 {
		t.Fatalf("check with ETDI_PINS saw the default database's pins: exit %d\n%s", r.code, r.stdout)
	}
	if r := run(ci, "pin", "approve", "--tools", "live.json", "--name", "files"); r.code != 0 {
		t.Fatalf("pin approve with ETDI_PINS: %d %s", r.code, r.stderr)
	}
	for _, f := range []string{"ci/trust.json", "ci/pins.db"} {
		if _, err := os.Stat(filepath.Join(home, f)); err != nil {
			t.Fatalf("%s not used: %v", f, err)
		}
	}
	// A flag still wins over the environment.
	if r := run(ci, "check", "--trust", filepath.Join(cfg, "trust.json"), "--pins", filepath.Join(cfg, "pins.db"), "--tools", "live.json", "--name", "files"); r.code != 0 {
		t.Fatalf("--pins did not win over ETDI_PINS: %d\n%s", r.code, r.stdout)
	}
}

// TestCLIFlagSpelling: --trust everywhere (--policy kept as an alias on
// trust commands), key id prefixes of at least 16 hex digits, --expires in
// days, and manifest init taking only its own flags.
func TestCLIFlagSpelling(t *testing.T) {
	p := newPinEnv(t)
	p.ok("trust", "add", "--trust", "t2.json", "--provider", "acme", "--key", "acme.pub", "--key", "acme2.pub")
	if r := p.ok("trust", "list", "--policy", "t2.json"); !strings.Contains(r.stdout, "acme") {
		t.Fatalf("--policy alias:\n%s", r.stdout)
	}
	pub, _ := os.ReadFile(filepath.Join(p.dir, "acme2.pub"))
	k, err := keys.ParsePublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := keys.ID(k)
	p.expect(1, "at least 16", "trust", "remove", "--trust", "t2.json", "--provider", "acme", "--key", id[:len("sha256:")+8])
	p.ok("trust", "remove", "--trust", "t2.json", "--provider", "acme", "--key", id[:len("sha256:")+16])
	if r := p.ok("trust", "list", "--trust", "t2.json", "--json"); strings.Contains(r.stdout, id) {
		t.Fatalf("key not removed:\n%s", r.stdout)
	}

	p.ok("sign", "--key", "acme.key", "--expires", "30d", "--issued-at", "2026-01-01T00:00:00Z", "--out", "b.json", "v1.manifest.json")
	r := p.run("verify", "--trust", "trust.json", "--at", "2026-01-02T00:00:00Z", "--json", "b.json")
	var v struct {
		IssuedAt, Expires time.Time
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Expires.Sub(v.IssuedAt) != 30*24*time.Hour {
		t.Fatalf("--expires 30d: %v %+v\n%s", err, v, r.stdout)
	}

	help := p.ok("manifest", "init", "--help").stdout
	for _, flag := range []string{"--trust", "--bundle", "--at", "--config", "--pins"} {
		if strings.Contains(help, flag+" ") {
			t.Errorf("manifest init --help lists %s, which it does not take", flag)
		}
	}
	p.expect(2, "unknown flag: --trust", "manifest", "init", "--provider", "acme", "--trust", "trust.json", "--tools", "live-ok.json")
}

// TestCLIAuditVerifyWithPub: the verifier key kept with a checkpoint is
// enough to prove consistency, as the hint says.
func TestCLIAuditVerifyWithPub(t *testing.T) {
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--trust", "trust.json", "warn")
	p.ok(append([]string{"pin", "approve"}, append(pinArgs, "--name", "files", "--tools", "live-ok.json")...)...)
	p.ok("audit", "checkpoint", "--pins", "pins.db", "--out", "cp.txt")
	if err := os.MkdirAll(filepath.Join(p.dir, "kept"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(p.dir, "audit.pub"), filepath.Join(p.dir, "kept", "audit.pub")); err != nil {
		t.Fatal(err)
	}
	p.expect(0, "extends the checkpoint", "audit", "verify", "--pins", "pins.db", "--checkpoint", "cp.txt", "--key", "kept/audit.pub")
	// A different verifier key is refused.
	p.ok("key", "generate", "--out", "other")
	other := newPinEnv(t)
	other.ok("trust", "unsigned", "--trust", "trust.json", "warn")
	other.ok(append([]string{"pin", "approve"}, append(pinArgs, "--name", "files", "--tools", "live-ok.json")...)...)
	other.ok("audit", "checkpoint", "--pins", "pins.db", "--out", "cp.txt")
	os.Rename(filepath.Join(other.dir, "audit.pub"), filepath.Join(p.dir, "kept", "other.pub"))
	p.expect(10, "checkpoint", "audit", "verify", "--pins", "pins.db", "--checkpoint", "cp.txt", "--key", "kept/other.pub")
}

// TestCLIBlockedUnsignedHint: the default policy's block says how to allow
// unsigned servers and what that means.
func TestCLIBlockedUnsignedHint(t *testing.T) {
	p := newPinEnv(t)
	r := p.expect(10, "unsigned_tool", "check", "--trust", "trust.json", "--pins", "pins.db", "--tools", "live-ok.json", "--name", "files")
	if !strings.Contains(r.stderr, "etdi trust unsigned warn --trust trust.json") || !strings.Contains(r.stderr, "pin unsigned servers by digest") {
		t.Fatalf("no hint on how to allow unsigned servers:\n%s", r.stderr)
	}
}

// TestCLIFetch saves a live server's tools/list; checking the saved file
// gives the same digests as checking the server.
func TestCLIFetch(t *testing.T) {
	p := liveEnv(t)
	r := runEtdi(t, p.dir, nil, append([]string{"fetch", "--out", "saved.json", "--start-timeout", "2m"}, fixture("fetch-m")...)...)
	if r.code != 0 || !strings.Contains(r.stderr, "wrote 2 tool(s)") {
		t.Fatalf("fetch: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	p.ok("check", "--trust", "trust.json", "--pins", "pins.db", "--bundle", "w.etdi.json", "--tools", "saved.json", "--yes")
	if r := p.liveCheck(nil, append([]string{"--bundle", "w.etdi.json"}, fixture("fetch-m")...)...); r.code != 0 {
		t.Fatalf("the live server differs from what fetch saved: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A changed server fetched again no longer matches the approval.
	r = runEtdi(t, p.dir, []string{"FIXTURE_CHANGE=description"}, append([]string{"fetch", "--out", "changed.json"}, fixture("fetch-m")...)...)
	if r.code != 0 {
		t.Fatalf("fetch: %d %s", r.code, r.stderr)
	}
	p.expect(11, "rug_pull", p.check("w.etdi.json", "changed.json")...)
}
