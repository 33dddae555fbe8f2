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

// The tool descriptions of widely used servers (server-everything,
// server-filesystem, server-memory) are not flagged as suspicious text,
// even with the other servers' tools pinned in the same database (each
// server is checked once after the others, in two databases).
func TestLiveRealServersNotSuspicious(t *testing.T) {
	needNode(t)
	p := textEnv(t)
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hello"), 0o644)
	type server struct {
		name string
		args []string
		env  []string
	}
	servers := []server{
		{"everything", []string{"--server", "--", "node", filepath.Join(nodeBinDir, "mcp-server-everything"), "stdio"}, nil},
		{"filesystem", []string{"--server", "--", "node", filepath.Join(nodeBinDir, "mcp-server-filesystem"), root}, nil},
		{"memory", []string{"--server", "--", "node", filepath.Join(nodeBinDir, "mcp-server-memory")}, []string{"MEMORY_FILE_PATH=" + filepath.Join(root, "memory.jsonl")}},
	}
	reversed := slices.Clone(servers)
	slices.Reverse(reversed)
	tools := 0
	for db, order := range map[string][]server{"a.db": servers, "b.db": reversed} {
		for _, s := range order {
			args := append([]string{"check", "--trust", "trust.json", "--pins", db, "--name", s.name, "--json", "--yes",
				"--start-timeout", "20s", "--timeout", "60s"}, s.args...)
			r := runEtdi(t, p.dir, append(s.env, "PATH="+os.Getenv("PATH")), args...)
			var co checkOutput
			if err := json.Unmarshal([]byte(r.stdout), &co); err != nil || co.Servers[0].Error != "" {
				t.Fatalf("%s: %v %s %s", s.name, err, r.stdout, r.stderr)
			}
			tools += len(co.Servers[0].Tools)
			for _, f := range co.Servers[0].Findings {
				if f.Kind == "suspicious_text" {
					t.Errorf("%s (%s): harmless tool flagged: %s: %q", s.name, db, f.Message, f.Match)
				}
			}
		}
	}
	t.Logf("%d tool definitions checked", tools)
}

// Before a first approval records a live server's instructions, --approve
// shows them.
func TestLiveApproveShowsInstructions(t *testing.T) {
	needNode(t)
	p := textEnv(t)
	r := startPty(t, p.dir, "check", "--trust", "trust.json", "--pins", "pins.db", "--name", "fx", "--approve", "--server", "--", "node", fixtureJS, "m9")
	r.waitFor(t, prompt, 1)
	out := r.output()
	if !strings.Contains(out, "server unsigned:fx sends these instructions to the model; approving records them:") ||
		!strings.Contains(out, "    | Weather server. Use get_weather for current conditions") {
		t.Fatalf("instructions not shown:\n%s", out)
	}
	fmt.Fprint(r.stdin, "n\n")
	r.waitFor(t, prompt, 2)
	fmt.Fprint(r.stdin, "n\n")
	r.wait(t)
}
