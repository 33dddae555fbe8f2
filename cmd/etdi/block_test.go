package main

import (
	"strings"
	"testing"
)

// TestCLIUnsignedBlocked runs the default policy (unsigned: block) against
// a server without a bundle: check fails with 10 and names the rule,
// approval refuses and pins nothing, and only an explicit change of the
// rule turns the same tools into an approval question (13).
func TestCLIUnsignedBlocked(t *testing.T) {
	p := newPinEnv(t)
	if r := p.ok("trust", "list", "--policy", "trust.json"); !strings.Contains(r.stdout, "block") {
		t.Fatalf("a new policy should block unsigned tools:\n%s", r.stdout)
	}
	r := p.expect(10, "unsigned_tool", p.check("", "live-ok.json", "--name", "files")...)
	if k := kindsOf(t, r.stdout); strings.Join(k, ",") != "unsigned_tool" {
		t.Fatalf("kinds %v, want only unsigned_tool", k)
	}
	p.expect(10, "blocks unsigned tools", "check", "--trust", "trust.json", "--pins", "pins.db", "--tools", "live-ok.json", "--name", "files")

	ap := p.run(append([]string{"pin", "approve"}, append(pinArgs, "--name", "files", "--tools", "live-ok.json", "--tool", "get_weather")...)...)
	if ap.code == 0 {
		t.Fatalf("pin approve of a blocked unsigned server exited 0:\n%s%s", ap.stdout, ap.stderr)
	}
	if l := p.run("pin", "list", "--pins", "pins.db", "--json"); strings.Contains(l.stdout, "get_weather") ||
		(l.code != 0 && !strings.Contains(l.stderr, "no pin database")) {
		t.Fatalf("a blocked unsigned tool was pinned (exit %d):\n%s%s", l.code, l.stdout, l.stderr)
	}

	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	p.expect(13, "new_tool", p.check("", "live-ok.json", "--name", "files")...)
}
