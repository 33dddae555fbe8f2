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
