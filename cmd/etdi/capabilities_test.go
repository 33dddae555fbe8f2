package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// everythingCmd runs the real server-everything from npm over stdio.
func everythingCmd() []string {
	return []string{"node", filepath.Join(nodeBinDir, "mcp-server-everything"), "stdio"}
}

// checkedTools are the names of the tools of every server of a check
// --json report.
func checkedTools(t *testing.T, r result) []string {
	t.Helper()
	var out struct {
		Servers []struct {
			Tools []struct{ Item, Name string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v\n%s%s", err, r.stdout, r.stderr)
	}
	var names []string
	for _, s := range out.Servers {
		for _, tool := range s.Tools {
			if tool.Item == "" {
				names = append(names, tool.Name)
			}
		}
	}
	return names
}

// --capabilities names what check declares, so that it approves what a
// host with those capabilities is offered: server-everything offers
// get-roots-list only under roots. Approved so, a gated session of a host
// that declares roots gets it, with nothing withheld; check without
// capabilities does not see it.
func TestCheckCapabilitiesApproveWhatTheHostIsOffered(t *testing.T) {
	p := liveEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	srv := everythingCmd()
	r := p.liveCheck(nil, append([]string{"--json", "--name", "everything", "--server", "--"}, srv...)...)
	if got := checkedTools(t, r); r.code != exitApproval || slices.Contains(got, "get-roots-list") || !slices.Contains(got, "echo") {
		t.Fatalf("check without capabilities: exit %d, tools %v", r.code, got)
	}
	r = p.liveCheck(nil, append([]string{"--json", "--yes", "--capabilities", "roots", "--name", "everything", "--server", "--"}, srv...)...)
	if got := checkedTools(t, r); r.code != 0 || !slices.Contains(got, "get-roots-list") || slices.Contains(got, "trigger-sampling-request") {
		t.Fatalf("check --capabilities roots --yes: exit %d, tools %v\n%s", r.code, got, r.stderr)
	}
	steps := `[{"op":"listTools"},{"op":"call","name":"get-roots-list","arguments":{}}]`
	tr := p.host(nil, steps, []string{"--roots", "file:///work/project"}, p.gated([]string{"--name", "everything"}, srv...)...)
	if got := tr.Steps[0].names(t); !slices.Contains(got, "get-roots-list") || strings.Contains(tr.Stderr, "withheld") {
		t.Fatalf("a host with roots through the gate: tools %v\n%s", got, tr.Stderr)
	}
	if tr.Steps[1].Error != nil || !strings.Contains(string(tr.Steps[1].Result), "file:///work/project") {
		t.Fatalf("get-roots-list through the gate: %s", tr.raw)
	}
}

// Without --capabilities, a host configuration entry is listed under what
// its host declares (SPEC.md §18.1): Claude Code roots and elicitation,
// Gemini CLI roots alone; --capabilities none declares nothing.
func TestCheckCapabilitiesOfTheHost(t *testing.T) {
	p := liveEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	entry, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": "node", "args": everythingCmd()[1:]}}})
	claude := filepath.Join(p.dir, "claude", ".mcp.json")
	gemini := filepath.Join(p.dir, "gemini", ".gemini", "settings.json")
	for _, f := range []string{claude, gemini} {
		os.MkdirAll(filepath.Dir(f), 0o755)
		if err := os.WriteFile(f, entry, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, file string
		extra      []string
		has, hasnt []string
	}{
		{"claude code", claude, nil, []string{"get-roots-list", "trigger-elicitation-request"}, []string{"trigger-sampling-request"}},
		{"gemini cli", gemini, nil, []string{"get-roots-list"}, []string{"trigger-elicitation-request", "trigger-sampling-request"}},
		{"none", claude, []string{"--capabilities", "none"}, []string{"echo"}, []string{"get-roots-list", "trigger-elicitation-request"}},
		{"given", gemini, []string{"--capabilities", "sampling,elicitation"}, []string{"trigger-sampling-request", "trigger-elicitation-request"}, []string{"get-roots-list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := p.liveCheck(nil, append([]string{"--json", "--config", tc.file}, tc.extra...)...)
			got := checkedTools(t, r)
			for _, n := range tc.has {
				if !slices.Contains(got, n) {
					t.Errorf("%s is not listed: %v\n%s", n, got, r.stderr)
				}
			}
			for _, n := range tc.hasnt {
				if slices.Contains(got, n) {
					t.Errorf("%s is listed: %v", n, got)
				}
			}
		})
	}
	// fetch declares the same.
	r := runEtdi(t, p.dir, []string{"PATH=" + os.Getenv("PATH")}, "fetch", "--start-timeout", "15s", "--config", gemini)
	if r.code != 0 || !strings.Contains(r.stdout, `"name":"get-roots-list"`) {
		t.Fatalf("fetch --config of a Gemini CLI file: exit %d\n%.300s%s", r.code, r.stdout, r.stderr)
	}
}

// An unknown capability, or one given where nothing is listed, is a usage
// error (exit 2), before any server is started.
func TestCheckCapabilitiesUsage(t *testing.T) {
	p := newPinEnv(t)
	p.write("live.json", `{"tools":[]}`)
	for _, args := range [][]string{
		{"check", "--capabilities", "rootz", "--server", "--", "false"},
		{"check", "--capabilities", "roots,", "--server", "--", "false"},
		{"check", "--capabilities", "none,roots", "--server", "--", "false"},
		{"fetch", "--capabilities", "tools", "--server", "--", "false"},
		{"check", "--capabilities", "roots", "--tools", "live.json"},
	} {
		r := p.run(args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "capabilit") {
			t.Errorf("etdi %v: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
	}
}
