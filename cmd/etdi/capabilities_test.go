package main

import (
	"encoding/json"
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
// capabilities does not see it. It stays a Go test: the host's session
// through the gate is a transcript of JSON-RPC steps it decodes.
func TestCheckCapabilitiesApproveWhatTheHostIsOffered(t *testing.T) {
	t.Parallel() // its own folder, servers and store
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

// The review command etdi run prints for a withheld tool still approves it
// after the server's resources were listed again alone (a
// notifications/resources/list_changed): the saved listing keeps the
// tools. Approving from it lets the tool through in the next session.
// It stays a Go test: it takes the review command from the decoded
// notifications of the host's session and runs what it says.
func TestRunReviewPendingAfterResourcesRelist(t *testing.T) {
	t.Parallel() // its own folder, servers and store
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
