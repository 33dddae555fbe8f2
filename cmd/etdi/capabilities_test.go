package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
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
// its host declares (docs/hosts.md#how-each-host-reads-an-entry): Claude Code roots and elicitation,
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

// The review command etdi run prints for a withheld tool still approves it
// after the server's resources were listed again alone (a
// notifications/resources/list_changed): the saved listing keeps the
// tools. Approving from it lets the tool through in the next session.
func TestRunReviewPendingAfterResourcesRelist(t *testing.T) {
	p := liveEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	if r := p.liveCheck(nil, append([]string{"--yes", "--name", "weather", "--server", "--"}, fixtureCmd("relist")...)...); r.code != 0 {
		t.Fatalf("approve: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	gate := p.gated([]string{"--name", "weather"}, fixtureCmd("relist")...)
	steps := `[{"op":"listTools"},{"op":"call","name":"get_weather","arguments":{"city":"A"}},
		{"op":"waitFor","method":"notifications/resources/list_changed","timeoutMs":10000}]`
	tr := p.host([]string{"FIXTURE_CHANGE=addtool", "FIXTURE_AFTER_CALL=resource"}, steps, nil, gate...)
	if got := tr.Steps[0].names(t); slices.Contains(got, "delete_city") || tr.Steps[2].Error != nil {
		t.Fatalf("the new tool reached the host, or the resources were not listed again: %v\n%s", got, tr.raw)
	}
	// The review command the host was told when the tool was withheld,
	// before the resources were listed again.
	review := ""
	for _, n := range tr.Notifications {
		var p struct {
			Data struct{ Review string } `json:"data"`
		}
		if n.Method == "notifications/message" && json.Unmarshal(n.Params, &p) == nil && p.Data.Review != "" {
			review = p.Data.Review
			break
		}
	}
	m := regexp.MustCompile(`^etdi check (.*?) --approve$`).FindStringSubmatch(review)
	if m == nil || !strings.Contains(m[1], "--tools ") {
		t.Fatalf("no review command with the saved listing told to the host: %q\n%s", review, tr.raw)
	}
	var args []string
	for _, a := range strings.Fields(m[1]) {
		args = append(args, strings.Trim(a, "'"))
	}
	r := runEtdi(t, t.TempDir(), nil, append(append([]string{"check"}, args...), "--yes")...)
	if !strings.Contains(r.stdout, "approved unsigned:weather/delete_city ") {
		t.Fatalf("the review command approved no delete_city: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	tr = p.host([]string{"FIXTURE_CHANGE=addtool"}, `[{"op":"listTools"}]`, nil, gate...)
	if got := tr.Steps[0].names(t); !slices.Contains(got, "delete_city") {
		t.Fatalf("after the review: %v\n%s", got, tr.Stderr)
	}
}
