package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// checkJSON is the part of check --json these tests read.
type checkJSON struct {
	ExitCode int `json:"exitCode"`
	Servers  []struct {
		Target              string `json:"target"`
		Program             string `json:"program"`
		Disabled            bool   `json:"disabled"`
		HostHonoursDisabled string `json:"hostHonoursDisabled"`
		Error               string `json:"error"`
		ExitCode            int    `json:"exitCode"`
		Findings            []struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"findings"`
	} `json:"servers"`
}

func parseCheck(t *testing.T, r result) checkJSON {
	t.Helper()
	var out checkJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("check --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	return out
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// An entry with a command and a URL is ambiguous for Claude Code: check
// starts neither and reports ambiguous_entry (exit 12, text and --json);
// wrap refuses it, naming the file, the entry and its members, and
// leaves the file as it is.
func TestCLIAmbiguousEntry(t *testing.T) {
	dir := wrapHome(t)
	marker := filepath.Join(dir, "command-ran")
	path := filepath.Join(dir, "repo", ".mcp.json")
	text := `{"mcpServers": {"both": {"command": "sh", "args": ["-c", "touch ` + marker + `"], "type": "http", "url": "http://127.0.0.1:9/mcp"}}}`
	writeText(t, path, text, 0o644)
	r := runEtdi(t, dir, nil, "check", "--config", path)
	if r.code != 12 || !strings.Contains(r.stdout, "ambiguous_entry") || !strings.Contains(r.stdout, `entry "both" is ambiguous for Claude Code`) ||
		!strings.Contains(r.stdout, "etdi check --config") || exists(marker) {
		t.Fatalf("check: exit %d, ran %v\n%s%s", r.code, exists(marker), r.stdout, r.stderr)
	}
	out := parseCheck(t, runEtdi(t, dir, nil, "check", "--json", "--config", path))
	if out.ExitCode != 12 || len(out.Servers) != 1 || len(out.Servers[0].Findings) != 1 || out.Servers[0].Findings[0].Kind != "ambiguous_entry" {
		t.Fatalf("--json: %+v", out)
	}
	r = runEtdi(t, dir, nil, "wrap", "--config", path)
	if r.code != 1 || !strings.Contains(r.stdout, "both: refused") || !strings.Contains(r.stdout, path) ||
		!strings.Contains(r.stdout, "a command and url") || readText(t, path) != text {
		t.Fatalf("wrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Gemini CLI connects to httpUrl before it starts a command: check
// reaches the URL and never runs the command; wrap refuses to leave the
// command in place.
func TestCLIGeminiURLBeforeCommand(t *testing.T) {
	dir := wrapHome(t)
	marker := filepath.Join(dir, "command-ran")
	path := filepath.Join(dir, "repo", ".gemini", "settings.json")
	text := `{"mcpServers": {"gem": {"command": "sh", "args": ["-c", "touch ` + marker + `"], "httpUrl": "http://127.0.0.1:9/mcp"}}}`
	writeText(t, path, text, 0o644)
	r := runEtdi(t, dir, nil, "check", "--config", path, "--timeout", "5s")
	if r.code == 0 || exists(marker) || !strings.Contains(r.stdout+r.stderr, "127.0.0.1:9") || !strings.Contains(r.stdout, "the host ignores its command") {
		t.Fatalf("check: exit %d, ran %v\n%s%s", r.code, exists(marker), r.stdout, r.stderr)
	}
	r = runEtdi(t, dir, nil, "wrap", "--config", path)
	if r.code != 1 || !strings.Contains(r.stdout, "Gemini CLI connects to httpUrl and never starts the command") || readText(t, path) != text {
		t.Fatalf("wrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A disabled entry is listed with whether its host honours that: Cline
// does, and the entry is neither started nor a finding (exit 0); Claude
// Code starts it anyway, so it is checked, and wrapped.
func TestCLIDisabledEntries(t *testing.T) {
	needNode(t)
	dir := wrapHome(t)
	marker := filepath.Join(dir, "command-ran")
	cline := filepath.Join(dir, "cline", "cline_mcp_settings.json")
	writeText(t, cline, `{"mcpServers": {"off": {"command": "sh", "args": ["-c", "touch `+marker+`"], "disabled": true}}}`, 0o644)
	r := runEtdi(t, dir, nil, "check", "--config", cline)
	if r.code != 0 || exists(marker) || !strings.Contains(r.stdout, "the host does not start it: not checked") {
		t.Fatalf("cline: exit %d, ran %v\n%s%s", r.code, exists(marker), r.stdout, r.stderr)
	}
	out := parseCheck(t, runEtdi(t, dir, nil, "check", "--json", "--config", cline))
	if out.ExitCode != 0 || !out.Servers[0].Disabled || out.Servers[0].HostHonoursDisabled != "yes" || len(out.Servers[0].Findings) != 0 {
		t.Fatalf("cline --json: %+v", out)
	}
	if r := runEtdi(t, dir, nil, "wrap", "--config", cline, "--dry-run"); r.code != 0 || !strings.Contains(r.stdout, "off: disabled: Cline does not start it") {
		t.Fatalf("cline wrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	mcp := filepath.Join(dir, "repo", ".mcp.json")
	writeText(t, mcp, `{"mcpServers": {"off": {"command": "sh", "args": ["-c", "touch `+marker+`; exec node `+fixtureJS+`"], "disabled": true}}}`, 0o644)
	r = runEtdi(t, dir, nil, "check", "--config", mcp, "--start-timeout", "15s")
	if r.code != 13 || !exists(marker) || !strings.Contains(r.stdout, "the host starts it anyway: checked") {
		t.Fatalf("claude code: exit %d, ran %v\n%s%s", r.code, exists(marker), r.stdout, r.stderr)
	}
	out = parseCheck(t, runEtdi(t, dir, nil, "check", "--json", "--config", mcp, "--start-timeout", "15s"))
	if out.ExitCode != 13 || !out.Servers[0].Disabled || out.Servers[0].HostHonoursDisabled != "no" {
		t.Fatalf("claude code --json: %+v", out)
	}
	if r := runEtdi(t, dir, nil, "wrap", "--config", mcp); r.code != 0 || !strings.Contains(r.stdout, "off: wrapped") {
		t.Fatalf("claude code wrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// check starts the program the host starts: the one on the entry's env
// PATH, never the one on etdi's; without env PATH, the host's own PATH
// keeps working with no finding; a relative PATH entry holding the
// program is program_unresolved.
func TestCLIProgramOnEntryPATH(t *testing.T) {
	needNode(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not on PATH")
	}
	touch, err := exec.LookPath("touch")
	if err != nil {
		t.Skip("touch not on PATH")
	}
	dir := wrapHome(t)
	repo := filepath.Join(dir, "repo")
	marker := filepath.Join(dir, "repository-node-ran")
	writeText(t, filepath.Join(repo, "bin", "node"), "#!/bin/sh\n"+touch+" "+marker+"\nexec "+node+" \"$@\"\n", 0o755)
	mcp := filepath.Join(repo, ".mcp.json")

	// The host's own PATH: the real node, no finding beyond approval.
	writeText(t, mcp, `{"mcpServers": {"w": {"command": "node", "args": ["`+fixtureJS+`"]}}}`, 0o644)
	out := parseCheck(t, runEtdi(t, dir, nil, "check", "--json", "--config", mcp, "--start-timeout", "15s"))
	if out.ExitCode != 13 || exists(marker) || out.Servers[0].Program != node {
		t.Fatalf("host PATH: %+v", out)
	}
	for _, f := range out.Servers[0].Findings {
		if f.Kind == "program_unresolved" || f.Kind == "ambiguous_entry" {
			t.Fatalf("host PATH: %+v", f)
		}
	}

	// The entry's PATH: the repository's node is what the host runs, so
	// it is what check runs and names.
	writeText(t, mcp, `{"mcpServers": {"w": {"command": "node", "args": ["`+fixtureJS+`"], "env": {"PATH": "`+filepath.Join(repo, "bin")+`"}}}}`, 0o644)
	r := runEtdi(t, dir, nil, "check", "--config", mcp, "--start-timeout", "15s")
	if !exists(marker) || !strings.Contains(r.stdout, "program [redacted]/node") {
		t.Fatalf("entry PATH: exit %d, ran %v\n%s%s", r.code, exists(marker), r.stdout, r.stderr)
	}
	os.Remove(marker)

	// A relative PATH entry: which node the host runs depends on its
	// directory: not started, a finding.
	writeText(t, mcp, `{"mcpServers": {"w": {"command": "node", "args": ["`+fixtureJS+`"], "env": {"PATH": "bin:`+filepath.Dir(node)+`"}}}}`, 0o644)
	r = runEtdi(t, dir, nil, "check", "--config", mcp, "--start-timeout", "15s")
	if r.code != 12 || exists(marker) || !strings.Contains(r.stdout, "program_unresolved") || !strings.Contains(r.stdout, "relative PATH entry") {
		t.Fatalf("relative PATH: exit %d, ran %v\n%s%s", r.code, exists(marker), r.stdout, r.stderr)
	}

	// Not on the entry's PATH at all: the host cannot start it either.
	writeText(t, mcp, `{"mcpServers": {"w": {"command": "node", "env": {"PATH": "`+filepath.Join(dir, "empty")+`"}}}}`, 0o644)
	r = runEtdi(t, dir, nil, "check", "--config", mcp)
	if r.code != 1 || !strings.Contains(r.stdout, "Claude Code cannot start") {
		t.Fatalf("not found: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
