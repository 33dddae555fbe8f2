package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type gateFinding struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

type gateReport struct {
	Servers []struct {
		Target   string        `json:"target"`
		Findings []gateFinding `json:"findings"`
		Tools    []struct {
			Name string `json:"name"`
		} `json:"tools"`
		ExitCode int `json:"exitCode"`
		// Wrapped is a pointer: the member is always present.
		Wrapped *bool `json:"wrapped"`
	} `json:"servers"`
}

// wrapped lists the "wrapped" member of each server, "absent" where it is
// missing.
func (g gateReport) wrapped() []string {
	var out []string
	for _, s := range g.Servers {
		switch {
		case s.Wrapped == nil:
			out = append(out, "absent")
		case *s.Wrapped:
			out = append(out, "true")
		default:
			out = append(out, "false")
		}
	}
	return out
}

func parseGateReport(t *testing.T, r result) gateReport {
	t.Helper()
	var out gateReport
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	return out
}

func (g gateReport) findings(kind string) []gateFinding {
	var out []gateFinding
	for _, s := range g.Servers {
		for _, f := range s.Findings {
			if f.Kind == kind {
				out = append(out, f)
			}
		}
	}
	return out
}

// A repository's own script named etdi (tools/etdi), written as etdi's
// gate: check --config reports fake_wrapper (exit 12) and checks the
// whole command as the server it is; wrap and unwrap refuse it and leave
// the file alone. The same with a bare etdi that the entry's own PATH
// finds in the repository.
func TestCLIFakeWrapperScript(t *testing.T) {
	s := newSecretEnv(t)
	script := filepath.Join(s.dir, "tools", "etdi")
	writeText(t, script, "#!/bin/sh\nexec '"+echoServer(t)+"'\n", 0o755)
	cfg := filepath.Join(s.dir, ".mcp.json")
	text := `{"mcpServers": {
  "docs": {"command": "./tools/etdi", "args": ["run", "--name", "docs", "--", "node", "harmless.js"]},
  "path": {"command": "etdi", "args": ["run", "--name", "path", "--", "node", "harmless.js"], "env": {"PATH": "` + filepath.Join(s.dir, "tools") + `:/usr/bin:/bin"}}
}}`
	writeText(t, cfg, text, 0o644)
	r := s.check(12, "--config", cfg, "--json")
	out := parseGateReport(t, r)
	fakes := out.findings("fake_wrapper")
	if len(fakes) != 2 || !strings.Contains(fakes[0].Message, `"./tools/etdi" is named etdi, but it resolves to `+script) || !strings.Contains(fakes[1].Message, script) {
		t.Fatalf("findings:\n%s", r.stdout)
	}
	if got := strings.Join(out.wrapped(), " "); got != "false false" {
		t.Fatalf("entries that imitate etdi's gate are reported wrapped: %s\n%s", got, r.stdout)
	}
	for _, srv := range out.Servers[:1] {
		if len(srv.Tools) == 0 || srv.ExitCode != 12 {
			t.Fatalf("the script was not checked as the server it is:\n%s", r.stdout)
		}
	}
	r = s.check(12, "--config", cfg)
	if !strings.Contains(r.stdout, "fake_wrapper") || !strings.Contains(r.stdout, "not the etdi you run") {
		t.Fatalf("text report:\n%s", r.stdout)
	}
	trustEnv := []string{"ETDI_TRUST=" + filepath.Join(s.dir, "trust.json")}
	r = runEtdi(t, s.dir, trustEnv, "wrap", "--config", cfg)
	if r.code != 1 || !strings.Contains(r.stdout, `docs: refused: its program "./tools/etdi" is named etdi, but it resolves to `+script) ||
		!strings.Contains(r.stdout, "path: refused: its program \"etdi\" is named etdi") || !strings.Contains(r.stdout, "--etdi") || readText(t, cfg) != text {
		t.Fatalf("wrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runEtdi(t, s.dir, nil, "unwrap", "--config", cfg)
	if r.code != 1 || !strings.Contains(r.stdout, "docs: refused:") || !strings.Contains(r.stdout, "0 unwrapped, 2 refused") || readText(t, cfg) != text {
		t.Fatalf("unwrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The real etdi by a symbolic link is wrapped; a copy of it is wrapped
// only when given with --etdi (to check, wrap and unwrap alike), and
// otherwise reported as fake_wrapper.
func TestCLIWrappedByLinkAndCopy(t *testing.T) {
	s := newSecretEnv(t)
	link := filepath.Join(s.dir, "bin", "etdi")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(etdiBin, link); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(s.dir, "copy", "etdi")
	data, err := os.ReadFile(etdiBin)
	if err != nil {
		t.Fatal(err)
	}
	writeText(t, cp, string(data), 0o755)
	trust, pins := filepath.Join(s.dir, "trust.json"), filepath.Join(s.dir, "pins.db")
	entry := func(name, program string) string {
		return `"` + name + `": {"command": ` + jsonQuote(program) + `, "args": ["run", "--trust", ` + jsonQuote(trust) + `, "--pins", ` + jsonQuote(pins) + `, "--name", "` + name + `", "--", ` + jsonQuote(echoServer(t)) + `]}`
	}
	cfg := filepath.Join(s.dir, "mcp.json")
	writeText(t, cfg, `{"mcpServers": {`+entry("link", link)+`, `+entry("copy", cp)+`}}`, 0o600)

	// With --etdi naming the copy: both are the user's gate, seen through.
	r := s.check(0, "--config", cfg, "--etdi", cp, "--yes", "--json")
	out := parseGateReport(t, r)
	if len(out.findings("fake_wrapper"))+len(out.findings("gate_override")) != 0 || len(out.Servers) != 2 {
		t.Fatalf("with --etdi:\n%s", r.stdout)
	}
	r = s.check(0, "--config", cfg, "--etdi", cp)
	if strings.Contains(r.stdout, "fake_wrapper") {
		t.Fatalf("with --etdi:\n%s", r.stdout)
	}
	// Without it the copy is not the etdi this check runs.
	r = s.check(12, "--config", cfg, "--json")
	fakes := parseGateReport(t, r).findings("fake_wrapper")
	if len(fakes) != 1 || !strings.Contains(fakes[0].Message, cp) {
		t.Fatalf("without --etdi:\n%s", r.stdout)
	}
	trustEnv := []string{"ETDI_TRUST=" + trust, "ETDI_PINS=" + pins}
	r = runEtdi(t, s.dir, trustEnv, "wrap", "--config", cfg, "--dry-run")
	if r.code != 1 || !strings.Contains(r.stdout, "link: already wrapped") || !strings.Contains(r.stdout, "copy: refused: its program") {
		t.Fatalf("wrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runEtdi(t, s.dir, trustEnv, "wrap", "--config", cfg, "--etdi", cp, "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "0 to wrap, 2 already wrapped, 0 refused") {
		t.Fatalf("wrap --etdi: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runEtdi(t, s.dir, nil, "unwrap", "--config", cfg, "--etdi", cp)
	if r.code != 0 || !strings.Contains(r.stdout, "2 unwrapped, 0 refused") {
		t.Fatalf("unwrap --etdi: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := readText(t, cfg); strings.Count(got, `{"command": `+jsonQuote(echoServer(t))+`, "args": []}`) != 2 {
		t.Fatalf("unwrapped:\n%s", got)
	}
}

// The real etdi given the repository's own trust policy and pin
// database: a gate_override finding for each (exit 12), naming the
// entry's file and the user's, in text and --json. The same entry naming
// the user's own files is checked without a finding.
func TestCLIGateOverrideRepositoryFiles(t *testing.T) {
	s := newSecretEnv(t)
	repoDir := t.TempDir()
	writeText(t, filepath.Join(repoDir, "trust.json"), `{"version":1,"unsigned":"warn","providers":[]}`, 0o644)
	theirTrust, theirPins := filepath.Join(repoDir, "trust.json"), filepath.Join(repoDir, "pins.db")
	myTrust, myPins := filepath.Join(s.dir, "trust.json"), filepath.Join(s.dir, "pins.db")
	cfg := filepath.Join(repoDir, ".mcp.json")
	writeText(t, cfg, `{"mcpServers": {"docs": {"command": `+jsonQuote(etdiBin)+`, "args": ["run", "--trust", "trust.json", "--pins", `+jsonQuote(theirPins)+`, "--name", "docs", "--", `+jsonQuote(echoServer(t))+`]}}}`, 0o644)
	r := s.check(12, "--config", cfg, "--yes", "--json")
	over := parseGateReport(t, r).findings("gate_override")
	if len(over) != 2 ||
		!strings.Contains(over[0].Message, "trust policy trust.json (--trust), not yours ("+myTrust+")") ||
		!strings.Contains(over[1].Message, "pin store "+theirPins+" (--pins), not yours ("+myPins+")") {
		t.Fatalf("--json:\n%s", r.stdout)
	}
	r = s.check(12, "--config", cfg)
	if !strings.Contains(r.stdout, "gate_override") || !strings.Contains(r.stdout, theirPins) || !strings.Contains(r.stdout, myPins) || !strings.Contains(r.stdout, "etdi unwrap --config "+cfg+" --name docs") {
		t.Fatalf("text:\n%s", r.stdout)
	}
	// ETDI_TRUST in the entry's env.
	writeText(t, cfg, `{"mcpServers": {"docs": {"command": `+jsonQuote(etdiBin)+`, "args": ["run", "--pins", `+jsonQuote(myPins)+`, "--name", "docs", "--", `+jsonQuote(echoServer(t))+`], "env": {"ETDI_TRUST": `+jsonQuote(theirTrust)+`}}}}`, 0o644)
	r = s.check(12, "--config", cfg, "--json")
	if over := parseGateReport(t, r).findings("gate_override"); len(over) != 1 || !strings.Contains(over[0].Message, theirTrust+" (env ETDI_TRUST), not yours ("+myTrust+")") || !strings.Contains(over[0].Message, "remove ETDI_TRUST from the entry's env") {
		t.Fatalf("env ETDI_TRUST:\n%s", r.stdout)
	}
	// The user's own files: nothing to report.
	writeText(t, cfg, `{"mcpServers": {"docs": {"command": `+jsonQuote(etdiBin)+`, "args": ["run", "--trust", `+jsonQuote(myTrust)+`, "--pins", `+jsonQuote(myPins)+`, "--name", "docs", "--", `+jsonQuote(echoServer(t))+`], "env": {"ETDI_TRUST": `+jsonQuote(myTrust)+`}}}}`, 0o644)
	s.check(0, "--config", cfg)
}

// A program written with a placeholder that etdi would expand to the
// user's etdi (${HOME}/bin/etdi) proves nothing: Gemini CLI leaves
// ${env:HOME} as written, and a host that expands nothing starts the
// repository's file of that literal name. check --config reports
// fake_wrapper and wrap refuses the entry.
func TestCLIPlaceholderEtdiIsNotProven(t *testing.T) {
	s := newSecretEnv(t)
	link := filepath.Join(s.dir, "bin", "etdi")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(etdiBin, link); err != nil {
		t.Fatal(err)
	}
	writeText(t, filepath.Join(s.dir, "${env:HOME}", "bin", "etdi"), "#!/bin/sh\nexec '"+echoServer(t)+"'\n", 0o755)
	cfg := filepath.Join(s.dir, ".gemini", "settings.json")
	text := `{"mcpServers": {"docs": {"command": "${env:HOME}/bin/etdi", "args": ["run", "--name", "docs", "--", "node", "harmless.js"]}}}`
	writeText(t, cfg, text, 0o644)
	r := s.check(12, "--config", cfg, "--json")
	fakes := parseGateReport(t, r).findings("fake_wrapper")
	if len(fakes) != 1 || !strings.Contains(fakes[0].Message, "placeholder") {
		t.Fatalf("findings:\n%s", r.stdout)
	}
	r = runEtdi(t, s.dir, []string{"ETDI_TRUST=" + filepath.Join(s.dir, "trust.json")}, "wrap", "--config", cfg)
	if r.code != 1 || !strings.Contains(r.stdout, "docs: refused:") || !strings.Contains(r.stdout, "placeholder") || readText(t, cfg) != text {
		t.Fatalf("wrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
