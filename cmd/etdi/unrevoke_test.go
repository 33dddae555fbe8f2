package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCLIRevokeAsksAndUnrevokeLifts: pin revoke refuses without a
// terminal and without --yes, naming the exact command; check (text and
// --json) shows who revoked, when, why and the command that lifts it;
// pin unrevoke lifts it, recorded in the history with who and why.
func TestCLIRevokeAsksAndUnrevokeLifts(t *testing.T) {
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	p.ok(append([]string{"pin", "approve"}, append(pinArgs, "--name", "files", "--tools", "live-ok.json", "--tool", "get_weather", "--tool", "get_forecast")...)...)

	r := p.run("pin", "revoke", "--pins", "pins.db", "unsigned:files/get_weather", "--by", "alice", "--reason", "leaks it's files")
	if r.code != exitUsage || !strings.Contains(r.stderr, `etdi: hint: run: etdi pin revoke --yes --pins pins.db unsigned:files/get_weather --by alice --reason 'leaks it'\''s files'`) {
		t.Fatalf("revoke without a terminal: exit %d\n%s", r.code, r.stderr)
	}
	p.expect(0, "", "check", "--trust", "trust.json", "--pins", "pins.db", "--name", "files", "--tools", "live-ok.json")
	long := strings.Repeat("x", 1025)
	p.expect(1, "1024", "pin", "revoke", "--yes", "--pins", "pins.db", "unsigned:files/get_weather", "--reason", long)

	r = p.ok("pin", "revoke", "--yes", "--pins", "pins.db", "unsigned:files/get_weather", "--by", "alice", "--reason", "leaks\x1b[2J files")
	if !strings.Contains(r.stdout, "lift it with: etdi pin unrevoke unsigned:files/get_weather") {
		t.Fatalf("revoke output:\n%s", r.stdout)
	}
	r = p.run("check", "--trust", "trust.json", "--pins", "pins.db", "--name", "files", "--tools", "live-ok.json")
	if r.code != exitRevoked || strings.Contains(r.stdout+r.stderr, "\x1b") {
		t.Fatalf("check of a revoked tool: exit %d\n%q", r.code, r.stdout+r.stderr)
	}
	for _, want := range []string{"by alice", `reason: leaks\u{1B}[2J files`, "etdi pin unrevoke unsigned:files/get_weather"} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("check text lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	r = p.run("check", "--trust", "trust.json", "--pins", "pins.db", "--name", "files", "--tools", "live-ok.json", "--json")
	var co checkOutput
	if err := json.Unmarshal([]byte(r.stdout), &co); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, srv := range co.Servers {
		for _, f := range srv.Findings {
			if f.Kind == "revoked" {
				found = strings.Contains(f.Message, "by alice (reason: leaks\x1b[2J files); an approver lifts the revocation with: etdi pin unrevoke unsigned:files/get_weather")
			}
		}
	}
	if !found {
		t.Fatalf("check --json lacks the revocation's who, why and way back:\n%s", r.stdout)
	}
	// Approving again says why not and the way back.
	r = p.run(append([]string{"pin", "approve"}, append(pinArgs, "--name", "files", "--tools", "live-ok.json", "--tool", "get_weather")...)...)
	if r.code != exitRevoked || !strings.Contains(r.stdout, "etdi pin unrevoke unsigned:files/get_weather") {
		t.Fatalf("approve of a revoked tool: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	p.expect(1, "unsigned:files/get_forecast is not revoked", "pin", "unrevoke", "--pins", "pins.db", "unsigned:files/get_forecast")
	p.expect(0, "lifted the revocation of unsigned:files/get_weather", "pin", "unrevoke", "--pins", "pins.db", "unsigned:files/get_weather", "--by", "bob", "--reason", "fixed upstream")
	p.expect(0, "", "check", "--trust", "trust.json", "--pins", "pins.db", "--name", "files", "--tools", "live-ok.json")
	r = p.ok("pin", "history", "--pins", "pins.db", "--json")
	if !strings.Contains(r.stdout, `"unrevoke"`) || !strings.Contains(r.stdout, `"fixed upstream"`) || !strings.Contains(r.stdout, `"bob"`) {
		t.Fatalf("history lacks the unrevoke record:\n%s", r.stdout)
	}
	p.ok("audit", "verify", "--pins", "pins.db")
}
