package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/pin"
)

// summaryEnv is a host configuration of four fixture servers under the
// unsigned warn policy: "fine" approved, "fresh" never approved (another
// artifact: approvals of the same script are shared across names),
// "changed" approved and then changed through CHANGED_MODE, "broken"
// unresolvable. The check of all four exits 11.
func summaryEnv(t *testing.T) (*pinEnv, []string) {
	p := liveEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	cfg := map[string]any{"mcpServers": map[string]any{
		"fine":    map[string]any{"command": "node", "args": []string{fixtureJS, "sum-fine"}},
		"fresh":   map[string]any{"command": "node", "args": []string{otherFixture(t, "fresh"), "sum-fresh"}},
		"changed": map[string]any{"command": "node", "args": []string{otherFixture(t, "changed"), "sum-changed"}, "env": map[string]string{"FIXTURE_CHANGE": "${CHANGED_MODE:-}"}},
		"broken":  map[string]any{"command": "node", "args": []string{fixtureJS, "${NOT_SET_ANYWHERE}"}},
	}}
	b, _ := json.Marshal(cfg)
	p.write("mcp.json", string(b))
	delete(cfg["mcpServers"].(map[string]any), "fresh")
	delete(cfg["mcpServers"].(map[string]any), "broken")
	b, _ = json.Marshal(cfg)
	p.write("ok.json", string(b)) // fine and changed
	for _, name := range []string{"fine", "changed"} {
		if r := p.liveCheck(nil, "--config", "mcp.json", "--name", name, "--yes"); r.code != 0 {
			t.Fatalf("approve %s: %d %s %s", name, r.code, r.stdout, r.stderr)
		}
	}
	return p, []string{"CHANGED_MODE=description"}
}

const wantSummary = "etdi: 4 servers: 1 ok, 1 needs approval, 1 blocked, 1 not checked\n"

// A check of several servers ends with one summary line on standard
// error, in prose, --json and --sarif alike; --json carries it as
// "summary".
func TestCheckSummaryLine(t *testing.T) {
	p, env := summaryEnv(t)
	for _, format := range []string{"", "--json", "--sarif"} {
		args := []string{"--config", "mcp.json"}
		if format != "" {
			args = append(args, format)
		}
		r := p.liveCheck(env, args...)
		if r.code != 11 {
			t.Fatalf("%s: exit %d\n%s%s", format, r.code, r.stdout, r.stderr)
		}
		if !strings.HasSuffix(r.stderr, wantSummary) || strings.Count(r.stderr, "servers:") != 1 {
			t.Errorf("%s: stderr does not end with the summary line:\n%s", format, r.stderr)
		}
		if strings.Contains(r.stdout, "servers:") {
			t.Errorf("%s: summary on standard output", format)
		}
		if format == "--json" {
			var co checkOutput
			if err := json.Unmarshal([]byte(r.stdout), &co); err != nil {
				t.Fatal(err)
			}
			if want := (checkSummary{Servers: 4, OK: 1, NeedsApproval: 1, Blocked: 1, NotChecked: 1}); co.Summary != want {
				t.Errorf("--json summary %+v, want %+v", co.Summary, want)
			}
		}
	}
	// One server: no summary line.
	r := p.liveCheck(env, "--config", "mcp.json", "--name", "fine")
	if r.code != 0 || strings.Contains(r.stderr, "servers:") || strings.Contains(r.stderr, "server:") {
		t.Errorf("one server: %d\n%s", r.code, r.stderr)
	}
}

// --quiet prints only the servers that are not ok, and of them only the
// problems; a run where everything is ok prints nothing at all.
func TestCheckQuiet(t *testing.T) {
	p, env := summaryEnv(t)
	full := p.liveCheck(env, "--config", "mcp.json", "-v")
	r := p.liveCheck(env, "--config", "mcp.json", "--quiet")
	// By default: the server that needs nothing is one line, every other
	// one in full; none of them is "ok" but fine.
	def := p.liveCheck(env, "--config", "mcp.json")
	for _, want := range []string{"\nok  fine (", "== fresh (", "APPROVAL REQUIRED: new_tool", "== changed (", "SECURITY ERROR: rug_pull", "== broken (", "ERROR: not checked"} {
		if !strings.Contains("\n"+def.stdout, want) {
			t.Errorf("the default report lacks %q:\n%s", want, def.stdout)
		}
	}
	if strings.Count("\n"+def.stdout, "\nok  ") != 1 || strings.Contains(def.stdout, "== fine (") {
		t.Errorf("the default report: one ok line, for fine, wanted:\n%s", def.stdout)
	}
	if r.code != 11 || r.code != full.code {
		t.Fatalf("exit %d, without --quiet %d\n%s%s", r.code, full.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"== fresh (", "APPROVAL REQUIRED: new_tool", "== changed (", "SECURITY ERROR: rug_pull",
		"{+ <IMPORTANT>Before calling", "== broken (", "NOT_SET_ANYWHERE"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--quiet lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, not := range []string{"== fine (", "  ok\n", "server unsigned:", "unsigned, allowed by policy (warn)", "warning: suspicious_text"} {
		if !strings.Contains(full.stdout, not) {
			t.Errorf("the full report lacks %q, so the test proves nothing:\n%s", not, full.stdout)
		}
		if strings.Contains(r.stdout, not) {
			t.Errorf("--quiet prints %q:\n%s", not, r.stdout)
		}
	}
	if !strings.HasSuffix(r.stderr, wantSummary) {
		t.Errorf("--quiet: no summary line:\n%s", r.stderr)
	}
	// Everything ok: nothing at all, though fine's tools draw
	// unsigned_tool warnings.
	ok := p.liveCheck(nil, "--config", "ok.json", "--quiet")
	if ok.code != 0 || ok.stdout != "" || ok.stderr != "" {
		t.Errorf("clean --quiet run: exit %d\nstdout %q\nstderr %q", ok.code, ok.stdout, ok.stderr)
	}
	if r := p.liveCheck(nil, "--config", "ok.json"); !strings.Contains(r.stdout, "ok  fine (") || !strings.Contains(r.stdout, "unsigned, allowed by policy") || !strings.Contains(r.stderr, "2 servers: 2 ok") {
		t.Errorf("clean run without --quiet: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// On a terminal, --quiet also silences the progress lines.
	run := startPty(t, p.dir, "check", "--trust", "trust.json", "--pins", "pins.db", "--config", "mcp.json", "--name", "fine", "--quiet")
	run.wait(t)
	if out := run.output(); strings.TrimSpace(out) != "" {
		t.Errorf("--quiet on a terminal printed:\n%s", out)
	}
	run = startPty(t, p.dir, "check", "--trust", "trust.json", "--pins", "pins.db", "--config", "mcp.json", "--name", "fine")
	run.wait(t)
	if out := run.output(); !strings.Contains(out, "etdi: checking fine") {
		t.Errorf("no progress without --quiet on a terminal, so the test proves nothing:\n%s", out)
	}
}

// Seven checks of a server whose tools keep needing approval write their
// findings once; a changed tool writes only its own new findings.
func TestCheckHistoryNotRepeated(t *testing.T) {
	p := severityEnv(t)
	args := []string{"check", "--trust", "trust.json", "--pins", "pins.db", "--tools", "v2.json", "--name", "notes"}
	count := func() (n int, last []string) {
		r := p.ok("audit", "export", "--pins", "pins.db", "--json")
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var rec pin.Record
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			n++
			last = append(last, fmt.Sprintf("%s %s %s", rec.Kind, rec.Tool, rec.Severity))
		}
		return n, last
	}
	p.expect(11, "rug_pull", args...)
	n1, _ := count()
	for range 6 {
		p.expect(11, "rug_pull", args...)
	}
	if n, recs := count(); n != n1 {
		t.Fatalf("six more checks grew the history from %d to %d records:\n%s", n1, n, strings.Join(recs[n1:], "\n"))
	}
	// read_notes changes: its new_tool, unsigned_tool and suspicious_text
	// findings are recorded again, nothing else.
	v2, _ := os.ReadFile(p.dir + "/v2.json")
	p.write("v3.json", strings.Replace(string(v2), "Read notes.", "Read all notes.", 1))
	p.expect(11, "rug_pull", "check", "--trust", "trust.json", "--pins", "pins.db", "--tools", "v3.json", "--name", "notes")
	n, recs := count()
	want := []string{"unsigned_tool read_notes warning", "new_tool read_notes error", "suspicious_text read_notes warning", "suspicious_text read_notes warning"}
	if got := recs[n1:]; n != n1+len(want) || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("after the change: %q, want %q", got, want)
	}
	if r := p.run("audit", "verify", "--pins", "pins.db"); r.code != 0 {
		t.Fatalf("audit verify: %d %s %s", r.code, r.stdout, r.stderr)
	}
}
