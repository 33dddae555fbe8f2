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
// the real filesystem, memory and everything servers offer. It stays a
// Go test: it decodes the history's and the check's JSON and the host's
// session through the gate, step by step.
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
