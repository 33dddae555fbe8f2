package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
)

// A host that does not list before it uses (the conformance suite, MCP
// Inspector's one-shot methods) gets from a real server through the gate
// what it gets directly: a call, a prompt, a resource, a resource a tool
// returned and one a tool created at run time. What the server does not
// offer is answered in the protocol's codes, etdi's reason in data. A Go
// test, not a script: it compares two decoded host transcripts step by
// step, leaving out when each step ran.
func TestRunRealServerWithoutListing(t *testing.T) {
	t.Parallel() // its own folder, servers and store
	p := liveEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	cmd := []string{"node", filepath.Join(nodeBinDir, "mcp-server-everything"), "stdio"}
	if r := p.liveCheck(nil, append([]string{"--yes", "--name", "everything", "--server", "--"}, cmd...)...); r.code != 0 {
		t.Fatalf("approve: %d %s%s", r.code, r.stdout, r.stderr)
	}
	steps := `[{"op":"call","name":"echo","arguments":{"message":"hi"}},
		{"op":"getPrompt","name":"simple-prompt"},
		{"op":"readResource","uri":"demo://resource/static/document/features.md"},
		{"op":"call","name":"get-resource-links","arguments":{"count":2}},
		{"op":"readResource","uri":"demo://resource/dynamic/text/2"},
		{"op":"call","name":"gzip-file-as-resource","arguments":{"name":"hi.txt.gz","data":"data:text/plain,hello","outputType":"resourceLink"}},
		{"op":"readResource","uri":"demo://resource/session/hi.txt.gz"},
		{"op":"call","name":"no-such-tool","arguments":{}},
		{"op":"readResource","uri":"demo://resource/nowhere"}]`
	direct := p.host(nil, steps, nil, cmd...)
	through := p.host(nil, steps, nil, p.gated([]string{"--name", "everything"}, cmd...)...)
	if len(through.Steps) != 9 || len(direct.Steps) != 9 || through.Exit != "ok" {
		t.Fatalf("steps: %s\n%s", through.raw, through.Stderr)
	}
	for i := range 7 {
		direct.Steps[i].At, through.Steps[i].At = 0, 0 // when, not what
		a, _ := json.Marshal(direct.Steps[i])
		b, _ := json.Marshal(through.Steps[i])
		if i == 4 { // a resource that names the time it was read
			a, b = direct.Steps[i].Result[:60], through.Steps[i].Result[:60]
		}
		if !bytes.Equal(a, b) || through.Steps[i].Error != nil {
			t.Errorf("step %d through the gate:\n%.600s\nwithout:\n%.600s", i, b, a)
		}
	}
	if e := through.Steps[7].Error; e == nil || e.Code != -32602 || through.Steps[7].blocked(t) != "not_listed" {
		t.Errorf("an unknown tool: %s", through.raw)
	}
	var d struct{ URI, Kind string }
	if e := through.Steps[8].Error; e == nil || e.Code != -32002 || json.Unmarshal(e.Data, &d) != nil || d.URI != "demo://resource/nowhere" || d.Kind != "not_listed" {
		t.Errorf("an unknown resource: %s", through.raw)
	}
}
