package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// One real server configured two ways (an argument of its command line
// changes a tool's description): each configuration's check exits 0 once
// both are approved, a third name for the same script shares the
// approvals, and revoking one definition leaves the other.
func TestPinApproveVariantsLive(t *testing.T) {
	needNode(t)
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "allow", "--trust", "trust.json")
	one := []string{"--name", "weather", "--server", "--", "node", fixtureJS, "mv0"}
	two := []string{"--name", "weather", "--server", "--", "env", "FIXTURE_CHANGE=nested", "node", fixtureJS, "mv0"}
	check := func(extra []string, args ...string) result {
		t.Helper()
		return p.liveCheck(nil, append(extra, args...)...)
	}
	if r := check([]string{"--yes"}, one...); r.code != 0 {
		t.Fatalf("first approval: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := check(nil, two...)
	if r.code != 11 || !strings.Contains(r.stdout, "approve it as another variant beside the approved definition: etdi pin approve --tool get_forecast") {
		t.Fatalf("the second configuration before approval: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// --yes alone approves new tools, never a changed definition.
	if r := check([]string{"--yes"}, two...); r.code != 11 {
		t.Fatalf("--yes approved a changed definition: %d\n%s", r.code, r.stdout)
	}
	a := p.run(append([]string{"pin", "approve", "--trust", "trust.json", "--pins", "pins.db", "--start-timeout", "15s", "--tool", "get_forecast"}, two...)...)
	if a.code != 0 || !strings.Contains(a.stdout, "approved another variant of unsigned:weather/get_forecast") || !strings.Contains(a.stdout, "(2 approved definitions)") {
		t.Fatalf("pin approve: %d\n%s%s", a.code, a.stdout, a.stderr)
	}
	for i := range 2 {
		for _, c := range [][]string{one, two} {
			if r := check(nil, c...); r.code != 0 {
				t.Fatalf("round %d, %v: %d\n%s%s", i, c, r.code, r.stdout, r.stderr)
			}
		}
	}
	l := p.ok("pin", "list", "--pins", "pins.db")
	if !strings.Contains(l.stdout, "unsigned:weather/get_forecast") || !strings.Contains(l.stdout, "(2 approved definitions)") || !strings.Contains(l.stdout, "    variant sha256:") {
		t.Fatalf("pin list:\n%s", l.stdout)
	}
	var out pinListOutput
	if err := json.Unmarshal([]byte(p.ok("pin", "list", "--pins", "pins.db", "--json").stdout), &out); err != nil {
		t.Fatal(err)
	}
	var first string
	for _, row := range out.Pins {
		if row.Ref == "unsigned:weather/get_forecast" {
			if len(row.Variants) != 2 || row.Variants[1].Digest != row.Digest || row.Variants[0].ApprovedBy == "" {
				t.Fatalf("pin list --json: %+v", row)
			}
			first = row.Variants[0].Digest
		}
	}
	if h := p.ok("pin", "history", "--pins", "pins.db", "unsigned:weather/get_forecast"); !strings.Contains(h.stdout, "as another variant") {
		t.Fatalf("history:\n%s", h.stdout)
	}
	p.ok("audit", "verify", "--pins", "pins.db")
	// The same script under another configuration name: approved there.
	if r := check(nil, "--name", "clock", "--server", "--", "node", fixtureJS, "mv0"); r.code != 0 {
		t.Fatalf("the same artifact under another name: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Revoking the first definition leaves the second.
	rv := p.run("pin", "revoke", "--yes", "--pins", "pins.db", "unsigned:weather/get_forecast", "--digest", first)
	if rv.code != 0 || !strings.Contains(rv.stdout, "other approved definitions stay approved") {
		t.Fatalf("revoke --digest: %d\n%s%s", rv.code, rv.stdout, rv.stderr)
	}
	if r := check(nil, one...); r.code != 14 {
		t.Fatalf("a revoked definition: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := check(nil, two...); r.code != 0 {
		t.Fatalf("the definition left: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	p.ok("audit", "verify", "--pins", "pins.db")
}
