package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// quietEnv is a host configuration of three real npm servers
// (server-filesystem, server-memory, server-everything) and the fixture
// server, all unsigned under the warn policy and approved.
func quietEnv(t *testing.T) *pinEnv {
	p := liveEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	root := t.TempDir()
	cfg := map[string]any{"mcpServers": map[string]any{
		"filesystem": map[string]any{"command": "node", "args": []string{filepath.Join(nodeBinDir, "mcp-server-filesystem"), root}},
		"memory":     map[string]any{"command": "node", "args": []string{filepath.Join(nodeBinDir, "mcp-server-memory")}, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(root, "memory.jsonl")}},
		"everything": map[string]any{"command": "node", "args": []string{filepath.Join(nodeBinDir, "mcp-server-everything"), "stdio"}},
		"notes":      map[string]any{"command": "node", "args": []string{fixtureJS, "quiet-notes"}},
	}}
	b, _ := json.Marshal(cfg)
	p.write("mcp.json", string(b))
	if r := p.liveCheck(nil, "--config", "mcp.json", "--yes"); r.code != 0 {
		t.Fatalf("approve: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	return p
}

func historySize(t *testing.T, p *pinEnv) int {
	t.Helper()
	r := p.ok("audit", "export", "--pins", "pins.db", "--json")
	return strings.Count(r.stdout, "\n")
}

func sarifResults(t *testing.T, stdout string) []sarifResult {
	t.Helper()
	var doc sarifDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	return doc.Runs[0].Results
}

// Four healthy servers print one line each and the summary; checking
// them again and again, in every output form, adds nothing to the
// history; SARIF has one result a server (its tools are unsigned), not
// one a tool; -v still shows every tool, with the unsigned state said
// once per server; --quiet prints nothing.
func TestCheckHealthyServersOneLineEach(t *testing.T) {
	t.Parallel() // its own pin database and servers
	p := quietEnv(t)
	n := historySize(t, p)
	r := p.liveCheck(nil, "--config", "mcp.json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 4 || strings.Count(r.stderr, "\n") != 1 || r.stderr != "etdi: 4 servers: 4 ok, 0 needs approval, 0 blocked, 0 not checked\n" {
		t.Fatalf("want 4 lines and the summary, got %d lines:\n%s%s", len(lines), r.stdout, r.stderr)
	}
	for _, want := range []string{"filesystem", "memory", "everything", "notes"} {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, "ok  "+want+" (") && strings.Contains(l, "unsigned, allowed by policy") && strings.Contains(l, " tools") {
				found = true
			}
		}
		if !found {
			t.Errorf("no line for %s:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "ok  filesystem (") || !strings.Contains(r.stdout, "14 tools") {
		t.Errorf("tool count of server-filesystem not shown:\n%s", r.stdout)
	}
	s := p.liveCheck(nil, "--config", "mcp.json", "--sarif")
	res := sarifResults(t, s.stdout)
	if s.code != 0 || len(res) != 4 {
		t.Fatalf("SARIF: exit %d, %d results, want 4 (one a server)", s.code, len(res))
	}
	for _, x := range res {
		if x.RuleID != "etdi/unsigned_tool" || x.Level != "warning" || !strings.Contains(x.Message.Text, "unsigned, allowed by policy") {
			t.Errorf("result %+v", x)
		}
	}
	// --json stays complete: a warning for each tool.
	j := p.liveCheck(nil, "--config", "mcp.json", "--json")
	if c := strings.Count(j.stdout, `"kind": "unsigned_tool"`); c < 40 {
		t.Errorf("--json has %d unsigned_tool findings, want one a tool", c)
	}
	v := p.liveCheck(nil, "--config", "mcp.json", "-v")
	for _, want := range []string{"== filesystem (", "  read_text_file ", "  ok\n", "unsigned, allowed by policy (warn): its 14 tools are pinned by digest"} {
		if !strings.Contains(v.stdout, want) {
			t.Errorf("-v lacks %q:\n%s", want, v.stdout)
		}
	}
	if strings.Contains(v.stdout, "warning: unsigned_tool") || strings.Count(v.stdout, "unsigned, allowed by policy") != 4 {
		t.Errorf("-v states unsigned tools other than once a server:\n%s", v.stdout)
	}
	if q := p.liveCheck(nil, "--config", "mcp.json", "--quiet"); q.code != 0 || q.stdout != "" || q.stderr != "" {
		t.Errorf("--quiet: %d %q %q", q.code, q.stdout, q.stderr)
	}
	// Each of these five checks (plain, SARIF, JSON, -v, --quiet) was one
	// of approved, unchanged servers.
	if got := historySize(t, p); got != n {
		t.Errorf("five checks of approved, unchanged servers grew the history from %d to %d records", n, got)
	}
}

// A signed server approved and unchanged is one line naming its signer
// and has no SARIF result at all.
func TestCheckSignedApprovedNoSARIF(t *testing.T) {
	p := liveEnv(t)
	base := append([]string{"--bundle", "w.etdi.json"}, fixture("quiet-signed")...)
	if r := p.liveCheck(nil, append([]string{"--yes"}, base...)...); r.code != 0 {
		t.Fatalf("--yes: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := p.liveCheck(nil, base...)
	if r.code != 0 || strings.Count(r.stdout, "\n") != 1 || !strings.HasPrefix(r.stdout, "ok  ") || !strings.Contains(r.stdout, "acme:weather signed by key ") {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	s := p.liveCheck(nil, append([]string{"--sarif"}, base...)...)
	if res := sarifResults(t, s.stdout); s.code != 0 || len(res) != 0 {
		t.Fatalf("SARIF of an approved, unchanged signed server: exit %d, results %+v", s.code, res)
	}
	// A tool added to it is shown in full, and is a result.
	c := p.liveCheck([]string{"FIXTURE_CHANGE=addtool"}, base...)
	if c.code != 10 || !strings.Contains(c.stdout, "== ") || !strings.Contains(c.stdout, "delete_city") {
		t.Fatalf("added tool: %d\n%s", c.code, c.stdout)
	}
	s = p.liveCheck([]string{"FIXTURE_CHANGE=addtool"}, append([]string{"--sarif"}, base...)...)
	if res := sarifResults(t, s.stdout); len(res) == 0 {
		t.Fatal("no SARIF result for an added unsigned tool under the block policy")
	}
}

// onTerminal runs etdi on a terminal (util-linux script) with env, and
// returns everything it printed.
func onTerminal(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatal("script (util-linux) is needed to give etdi a terminal")
	}
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	cmd := exec.Command("script", "-qec", etdiBin+" "+strings.Join(q, " "), "/dev/null")
	cmd.Dir = dir
	cmd.Env = append([]string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, ".config"), "PATH=" + os.Getenv("PATH")}, env...)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// Colour only on a terminal: never in a pipe; --color always colours a
// pipe; NO_COLOR turns off automatic colour, and TERM=dumb does too;
// --color never on a terminal does not colour.
func TestCheckColour(t *testing.T) {
	p := liveEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	args := []string{"--name", "col", "--server", "--", "node", fixtureJS, "quiet-colour"}
	p.liveCheck(nil, append([]string{"--yes"}, args...)...)
	piped := p.liveCheck(nil, args...)
	if piped.code != 0 || strings.ContainsRune(piped.stdout+piped.stderr, 0x1b) {
		t.Fatalf("piped output holds ESC: %d %q %q", piped.code, piped.stdout, piped.stderr)
	}
	always := p.liveCheck(nil, append([]string{"--color", "always"}, args...)...)
	if !strings.Contains(always.stdout, "\x1b[32mok\x1b[0m") {
		t.Fatalf("--color always: no colour: %q", always.stdout)
	}
	always = p.liveCheck([]string{"NO_COLOR=1"}, append([]string{"--color", "always"}, args...)...)
	if !strings.ContainsRune(always.stdout, 0x1b) {
		t.Fatalf("--color always with NO_COLOR: no colour: %q", always.stdout)
	}
	if r := p.liveCheck(nil, append([]string{"--color", "sometimes"}, args...)...); r.code != 2 {
		t.Errorf("--color sometimes: exit %d", r.code)
	}
	base := append([]string{"check", "--trust", "trust.json", "--pins", "pins.db"}, args...)
	if out := onTerminal(t, p.dir, []string{"TERM=xterm"}, base...); !strings.Contains(out, "\x1b[32mok\x1b[0m") {
		t.Errorf("terminal: no colour: %q", out)
	}
	for _, c := range []struct {
		env  []string
		args []string
	}{
		{[]string{"TERM=xterm", "NO_COLOR=1"}, nil},
		{[]string{"TERM=dumb"}, nil},
		{[]string{"TERM=xterm"}, []string{"--color", "never"}},
	} {
		if out := onTerminal(t, p.dir, c.env, append(append([]string{}, base[:1]...), append(c.args, base[1:]...)...)...); strings.ContainsRune(out, 0x1b) || !strings.Contains(out, "ok  ") {
			t.Errorf("%v %v: %q", c.env, c.args, out)
		}
	}
}

// With colour on, the only escape sequences are etdi's own colour codes:
// a terminal escape in an entry's name is still shown escaped.
func TestCheckColourKeepsServerTextEscaped(t *testing.T) {
	p := liveEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	p.write("mcp.json", `{"mcpServers":{"ev\u001b[2Jil\u202e":{"command":"node","args":["`+fixtureJS+`","quiet-hostile"]}}}`)
	r := p.liveCheck(nil, "--config", "mcp.json", "--color", "always")
	if r.code != 1 || !strings.Contains(r.stdout, `ev\u{1B}[2Jil\u{202E}`) {
		t.Fatalf("exit %d:\n%q", r.code, r.stdout)
	}
	own := strings.NewReplacer("\x1b[0m", "", "\x1b[1m", "", "\x1b[32m", "", "\x1b[33m", "", "\x1b[1;31m", "")
	if rest := own.Replace(r.stdout); strings.ContainsRune(rest, 0x1b) || !strings.ContainsRune(r.stdout, 0x1b) {
		t.Fatalf("an escape sequence that is not etdi's colour, or no colour at all:\n%q", r.stdout)
	}
}
