package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/colour"
	"github.com/etdi-dev/etdi/pin"
)

// etdiPath runs etdi in p's directory with PATH (for node).
func (p *pinEnv) etdiPath(env []string, args ...string) result {
	p.t.Helper()
	return runEtdi(p.t, p.dir, append(append(env, pwEnv...), "PATH="+os.Getenv("PATH")), args...)
}

// The starter policy for the reference servers with its scopes overlay,
// on the real server-filesystem: approving with the overlay records the
// scopes and says what the policy decides; through etdi run, write_file
// is put to the person (refused by a host that cannot ask, forwarded
// when accepted) and the reads pass. The overlay's tool names are those
// the real filesystem, memory and everything servers offer.
func TestScopesReferenceServers(t *testing.T) {
	t.Parallel() // its own folder, pin database and servers
	p := liveEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hello"), 0o644)
	overlay, cedar := examplePolicy("reference-servers.scopes.json"), examplePolicy("reference-servers.cedar")
	fs := []string{"node", filepath.Join(nodeBinDir, "mcp-server-filesystem"), root}
	approve := append([]string{"pin", "approve", "--trust", "trust.json", "--pins", "pins.db", "--cedar", cedar, "--scopes", overlay,
		"--name", "filesystem", "--server", "--"}, fs...)
	r := p.etdiPath(nil, approve...)
	if r.code != 0 {
		t.Fatalf("approve: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"write_file sha256:", "scopes: files:write, calls: ask (ask-file-writes)",
		"scopes: files:read, calls: allow",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("approve output lacks %q:\n%s", want, r.stdout)
		}
	}
	h := p.ok("pin", "history", "--pins", "pins.db", "--json")
	var recs []struct {
		Tool   string
		Scopes []string
	}
	if err := json.Unmarshal([]byte(h.stdout), &recs); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rec := range recs {
		found = found || (rec.Tool == "write_file" && slices.Equal(rec.Scopes, []string{"files:write"}))
	}
	if !found {
		t.Errorf("the history does not record the scopes:\n%.2000s", h.stdout)
	}
	c := p.etdiPath(nil, append([]string{"check", "--trust", "trust.json", "--pins", "pins.db", "--cedar", cedar, "--json", "--name", "filesystem", "--server", "--"}, fs...)...)
	var rep struct {
		Servers []struct {
			Tools []struct {
				Name, Status string
				Scopes       []string
			}
		}
	}
	json.Unmarshal([]byte(c.stdout), &rep)
	got := map[string]string{}
	for _, srv := range rep.Servers {
		for _, st := range srv.Tools {
			got[st.Name] = st.Status + " " + strings.Join(st.Scopes, ",")
		}
	}
	if c.code != 0 || got["write_file"] != "ok files:write" || got["read_text_file"] != "ok files:read" {
		t.Errorf("check: %d %v\n%.3000s%s", c.code, got, c.stdout, c.stderr)
	}

	target := filepath.Join(root, "new.txt")
	steps := script(call("read_text_file", `{"path":"`+filepath.Join(root, "notes.txt")+`"}`),
		call("write_file", `{"path":"`+target+`","content":"x"}`), call("list_directory", `{"path":"`+root+`"}`))
	gate := p.gated([]string{"--name", "filesystem", "--cedar", cedar}, fs...)
	tr := p.host(nil, steps, []string{"--elicitation", "none"}, gate...)
	wantOutcomes(t, tr, "ok", "policy_ask[ask-file-writes] unsupported", "ok")
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the refused write reached the server")
	}
	tr = p.host(nil, steps, []string{"--elicitation", "accept"}, gate...)
	wantOutcomes(t, tr, "ok", "ok", "ok")
	if b, err := os.ReadFile(target); err != nil || string(b) != "x" {
		t.Fatalf("the accepted write: %q %v", b, err)
	}

	for _, srv := range []struct {
		name string
		cmd  []string
		env  []string
	}{
		{"memory", []string{"node", filepath.Join(nodeBinDir, "mcp-server-memory")}, []string{"MEMORY_FILE_PATH=" + filepath.Join(root, "memory.jsonl")}},
		{"everything", []string{"node", filepath.Join(nodeBinDir, "mcp-server-everything"), "stdio"}, nil},
	} {
		r := p.etdiPath(srv.env, append([]string{"pin", "approve", "--trust", "trust.json", "--pins", "pins.db", "--scopes", overlay,
			"--name", srv.name, "--server", "--"}, srv.cmd...)...)
		if r.code != 0 || !strings.Contains(r.stdout, "scopes: ") {
			t.Errorf("approve %s with the overlay: %d\n%s%s", srv.name, r.code, r.stdout, r.stderr)
		}
	}
}

// An overlay that does not name the server being approved, or names a
// tool it does not offer, approves nothing and says why; so does a scope
// given to a signed tool.
func TestScopesRefused(t *testing.T) {
	p := workspaceEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	p.write("typo.json", `{"etdiScopes":1,"tools":{"workspace/write_fiel":["files:write"]}}`)
	p.write("other.json", `{"etdiScopes":1,"tools":{"filesystem/write_file":["files:write"]}}`)
	for file, want := range map[string]string{
		"typo.json":  `names tools that server "workspace" does not offer: write_fiel`,
		"other.json": `names no tool of server "workspace" (it names servers filesystem)`,
	} {
		r := p.etdiPath(workspace, append([]string{"pin", "approve", "--trust", "trust.json", "--pins", "fresh.db", "--name", "workspace", "--scopes", file}, fixture("scopes")...)...)
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d\n%s%s", file, r.code, r.stdout, r.stderr)
		}
	}
	r := p.etdiPath(workspace, append([]string{"pin", "approve", "--trust", "trust.json", "--pins", "pins.db", "--bundle", "ws.etdi.json",
		"--tool", "read_file", "--scope", "files:none"}, fixture("scopes")...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "is signed by") || !strings.Contains(r.stderr, "cannot be given at approval") {
		t.Errorf("signed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if h := p.ok("pin", "history", "--pins", "pins.db", "--json"); strings.Contains(h.stdout, "files:none") {
		t.Error("the refused scope reached the history")
	}
}

// policy validate warns about a file that would forbid every call, with
// the permit to add; exit 0, or 1 with --strict.
func TestPolicyValidateWarns(t *testing.T) {
	p := newPinEnv(t)
	p.write("forbid.cedar", `@id("no-shell") forbid (principal, action, resource) when { resource.scopes.contains("shell:*") };`)
	r := p.run("policy", "validate", "forbid.cedar")
	if r.code != 0 || !strings.Contains(r.stderr, "WARNING: no permit policy: every tool call would be forbidden") ||
		!strings.Contains(r.stderr, `@id("baseline") permit (principal, action == Etdi::Action::"call", resource);`) ||
		!strings.Contains(r.stdout, "OK with 1 warnings") {
		t.Fatalf("validate: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := p.run("policy", "validate", "--strict", "forbid.cedar"); r.code != 1 {
		t.Fatalf("--strict: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := p.run("policy", "validate", "--strict", "--json", "forbid.cedar"); r.code != 1 || !strings.Contains(r.stdout, `"no permit policy: every tool call`) {
		t.Fatalf("--strict --json: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = p.run("policy", "validate", "--strict", examplePolicy("reference-servers.cedar"))
	if r.code != 0 || strings.Contains(r.stderr, "WARNING") {
		t.Fatalf("the starter policy: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Scopes stay with the approved definition: a changed definition is
// approved again with the scopes approved before, and the approval says
// so; scopes given to an approved, unchanged tool approve it again and
// show what they replace; policy test reads them from the pin.
func TestScopesChangedDefinition(t *testing.T) {
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	v1 := `{"tools":[{"name":"write_file","description":"Write a file.","inputSchema":{"type":"object"}}]}`
	p.write("v1.json", v1)
	p.write("v2.json", strings.Replace(v1, "Write a file.", "Write or append to a file.", 1))
	args := func(tools string, extra ...string) []string {
		return append([]string{"pin", "approve", "--trust", "trust.json", "--pins", "pins.db", "--name", "files", "--tools", tools}, extra...)
	}
	if r := p.ok(args("v1.json", "--scope", "files:write")...); !strings.Contains(r.stdout, "scopes: files:write") {
		t.Fatalf("%s", r.stdout)
	}
	r := p.ok(args("v2.json", "--tool", "write_file")...)
	if !strings.Contains(r.stdout, "scopes: files:write (kept from the definition approved before)") {
		t.Fatalf("the re-approval does not show the scopes it keeps:\n%s", r.stdout)
	}
	r = p.ok(args("v2.json", "--tool", "write_file", "--scope", "files:write", "--scope", "files:append")...)
	if !strings.Contains(r.stdout, "gave new scopes to unsigned:files/write_file") || !strings.Contains(r.stdout, "scopes: files:append, files:write (were: files:write)") {
		t.Fatalf("%s", r.stdout)
	}
	p.write("no-writes.cedar", `@id("baseline") permit (principal, action == Etdi::Action::"call", resource);
@id("no-writes") forbid (principal, action == Etdi::Action::"call", resource) when { resource.scopes.contains("files:write") };`)
	r = p.run("policy", "test", "--pins", "pins.db", "--cedar", "no-writes.cedar", "--tool", "unsigned:files/write_file", "--expect", "forbid")
	if r.code != 0 || !strings.Contains(r.stdout, "forbid (no-writes)") {
		t.Fatalf("policy test: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// pin approve --config auto approves through etdi review, which gives no
// scopes: --scope and --scopes are refused there rather than dropped, so
// that no tool is approved without the scopes the person gave it.
func TestScopesNotDroppedByReview(t *testing.T) {
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	p.write("scopes.json", `{"etdiScopes":1,"tools":{"files/write_file":["files:write"]}}`)
	for _, extra := range [][]string{{"--scope", "files:write"}, {"--scopes", "scopes.json"}} {
		r := p.run(append([]string{"pin", "approve", "--trust", "trust.json", "--pins", "pins.db", "--config", "auto"}, extra...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--scope") || !strings.Contains(r.stderr, "--name") {
			t.Errorf("%v: exit %d\n%s%s", extra, r.code, r.stdout, r.stderr)
		}
	}
}

// An approval made by check --approve or etdi review says the scopes it
// gave or kept, as pin approve does: a changed definition approved
// there keeps the scopes of the one approved before (docs/storage.md#scopes-of-unsigned-tools), and
// a permit rule that reads them keeps matching it.
func TestScopesKeptShownByEveryApproval(t *testing.T) {
	a := pin.Approval{Pin: pin.Pin{Server: "unsigned:files", Tool: "read_file", Digest: "sha256:" + strings.Repeat("a", 64),
		Signer: pin.Unsigned, Scopes: []string{"files:read"}}, Kind: "rug_pull", ScopesKept: true}
	want := "scopes: files:read (kept from the definition approved before)"
	var b bytes.Buffer
	printCheck(&b, &checkReport{Target: "files", Server: "unsigned:files", Approved: []pin.Approval{a}}, colour.New(false))
	if !strings.Contains(b.String(), want) {
		t.Errorf("check --approve:\n%s", b.String())
	}
	if got := approvedLine(a); !strings.Contains(got, want) {
		t.Errorf("review: %s", got)
	}
}

// --scope without --tool on a server whose tools all match their pins
// gives nothing: said, exit 2, rather than "nothing to approve" and exit
// 0 as if the scopes had been given.
func TestScopesWithNothingApprovedSaid(t *testing.T) {
	p := newPinEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	args := []string{"pin", "approve", "--trust", "trust.json", "--pins", "pins.db", "--name", "files", "--tools", "live-ok.json"}
	p.ok(args...)
	r := p.run(append(args, "--scope", "files:write")...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "no scope was given") || !strings.Contains(r.stderr, "--tool NAME --scope files:write") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := p.ok(append(args, "--tool", "get_weather", "--scope", "files:write")...); !strings.Contains(r.stdout, "gave new scopes to unsigned:files/get_weather") {
		t.Fatalf("%s", r.stdout)
	}
}
