package main

import (
	"os"
	"strings"
	"testing"
)

// A local server file edited without changing its tools (a real node
// process) is one server_updated, decided by the trust policy's update
// rule: check exits 13 under ask, 0 under allow, 11 under block; etdi run
// under ask starts it, relays its tools and says what changed; a tool
// changed in the same edit is a rug pull, withheld alone.
func TestCLIUnsignedServerUpdated(t *testing.T) {
	p := liveEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	server := otherFixture(t, "notes 1.0")
	srv := []string{"--name", "notes", "--server", "--", "node", server, "u"}
	if r := p.liveCheck(nil, append([]string{"--yes"}, srv...)...); r.code != 0 {
		t.Fatalf("approve: %d %s", r.code, r.stderr)
	}
	f, err := os.OpenFile(server, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("// notes 1.1: the same tools\n")
	f.Close()

	r := p.liveCheck(nil, append([]string{"--json"}, srv...)...)
	if r.code != 13 || !strings.Contains(r.stdout, `"server_updated"`) || strings.Contains(r.stdout, `"rug_pull"`) ||
		!strings.Contains(r.stdout, `"pinnedServed"`) || strings.Contains(r.stdout, `"pinnedServed": ""`) {
		t.Fatalf("ask: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	steps := `[{"op":"listTools"},{"op":"call","name":"get_weather","arguments":{"city":"A"}}]`
	tr := p.host(nil, steps, nil, p.gated([]string{"--name", "notes"}, "node", server, "u")...)
	if len(tr.Steps[0].names(t)) != 2 || tr.Steps[1].Error != nil || !strings.Contains(tr.Stderr, "server_updated") || !strings.Contains(tr.Stderr, " -> ") {
		t.Fatalf("the gate under ask: %s\n%s", tr.raw, tr.Stderr)
	}
	if !strings.Contains(tr.raw, "notifications/message") || !strings.Contains(tr.raw, "was updated") {
		t.Fatalf("the host was not told: %s", tr.raw)
	}
	tr = p.host([]string{"FIXTURE_CHANGE=description"}, steps, nil, p.gated([]string{"--name", "notes"}, "node", server, "u")...)
	if k := tr.Steps[1].blocked(t); k != "rug_pull" || len(tr.Steps[0].names(t)) != 1 {
		t.Fatalf("a tool changed in the update: %q\n%s", k, tr.raw)
	}

	p.ok("trust", "unsigned", "--policy", "trust.json", "warn", "--on-update", "block")
	if r := p.liveCheck(nil, srv...); r.code != 11 || !strings.Contains(r.stderr+r.stdout, "server_updated") {
		t.Fatalf("block: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := p.liveCheck(nil, append([]string{"--yes"}, srv...)...); r.code != 11 {
		t.Fatalf("block approved with --yes: %d\n%s", r.code, r.stderr)
	}
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn", "--on-update", "allow")
	if r := p.liveCheck(nil, srv...); r.code != 0 || !strings.Contains(r.stderr+r.stdout, "server_updated") {
		t.Fatalf("allow: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn", "--on-update", "ask")
	if r := p.liveCheck(nil, append([]string{"--yes"}, srv...)...); r.code != 0 {
		t.Fatalf("approve the update: %d\n%s", r.code, r.stderr)
	}
	if r := p.liveCheck(nil, srv...); r.code != 0 || strings.Contains(r.stderr+r.stdout, "server_updated") {
		t.Fatalf("after approving: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
