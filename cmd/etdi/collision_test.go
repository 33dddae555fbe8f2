package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// collisionConfig writes a host configuration of real servers: server-memory,
// the fixture offering a search_nodes of its own (weather) or one
// claiming to be server-memory's (imitator), the fixture with a changed
// get_weather (weather-changed), and server-filesystem under two names.
func collisionConfig(p *pinEnv, root string) string {
	fixtureEntry := func(env map[string]string) map[string]any {
		return map[string]any{"command": "node", "args": []string{fixtureJS, "collision-marker"}, "env": env}
	}
	cfg := map[string]any{"mcpServers": map[string]any{
		"memory":          map[string]any{"command": "node", "args": []string{filepath.Join(nodeBinDir, "mcp-server-memory")}, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(root, "memory.jsonl")}},
		"weather":         fixtureEntry(map[string]string{"FIXTURE_MODE": "collide"}),
		"imitator":        fixtureEntry(map[string]string{"FIXTURE_MODE": "collide-imitate"}),
		"weather-changed": fixtureEntry(map[string]string{"FIXTURE_MODE": "collide", "FIXTURE_CHANGE": "description"}),
		"files":           map[string]any{"command": "node", "args": []string{filepath.Join(nodeBinDir, "mcp-server-filesystem"), root}},
		"files-again":     map[string]any{"command": "node", "args": []string{filepath.Join(nodeBinDir, "mcp-server-filesystem"), root}},
	}}
	b, _ := json.Marshal(cfg)
	p.write("mcp.json", string(b))
	return filepath.Join(p.dir, "mcp.json")
}

// approveLine returns the command a check's output says approves tool,
// split into its arguments (the test's paths need no quoting).
func approveLine(t *testing.T, out, lead string) []string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, lead); i >= 0 {
			f := strings.Fields(l[i+len(lead):])
			if len(f) < 3 || f[0] != "etdi" {
				t.Fatalf("not a command: %q", l)
			}
			return f[1:]
		}
	}
	t.Fatalf("no %q in\n%s", lead, out)
	return nil
}

// Two unrelated unsigned servers offering the same tool name (the real
// server-memory and the fixture, both search_nodes): a warning, approved
// as a new tool by check --yes, with the exact command that approves it.
// A definition imitating server-memory's stays impersonation (exit 12),
// and the command its finding prints approves it, from any directory.
func TestCollisionRealServers(t *testing.T) {
	t.Parallel() // its own folder, pin database and servers
	p := liveEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	cfg := collisionConfig(p, t.TempDir())
	check := func(name string, extra ...string) result {
		return p.liveCheck(nil, append([]string{"--config", cfg, "--name", name}, extra...)...)
	}
	if r := check("memory", "--yes"); r.code != 0 {
		t.Fatalf("memory: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := check("weather")
	want := "etdi pin approve --trust " + filepath.Join(p.dir, "trust.json") + " --pins " + filepath.Join(p.dir, "pins.db") +
		" --config " + cfg + " --name weather --tool search_nodes"
	if r.code != 13 || !strings.Contains(r.stdout, "warning: name_collision: tool unsigned:weather/search_nodes") ||
		!strings.Contains(r.stdout, "approve it as a new tool: "+want) || strings.Contains(r.stdout, "shadowing") {
		t.Fatalf("collision: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := check("weather", "--yes"); r.code != 0 || !strings.Contains(r.stdout, "approved unsigned:weather/search_nodes") {
		t.Fatalf("--yes: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := check("weather"); r.code != 0 || strings.Contains(r.stdout, "name_collision") {
		t.Fatalf("after approval: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A description copying server-memory's and claiming to be it.
	r = check("imitator")
	if r.code != 12 || !strings.Contains(r.stdout, "shadowing: tool unsigned:imitator/search_nodes") ||
		!strings.Contains(r.stdout, "copies the description") {
		t.Fatalf("imitation: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	args := approveLine(t, r.stdout, "approve it by name: ")
	if strings.Join(args, " ") != strings.Replace(strings.TrimPrefix(want, "etdi "), "--name weather", "--name imitator", 1) {
		t.Fatalf("command %v", args)
	}
	// Not approved by check --yes; approved by the printed command,
	// run in another directory.
	if r := check("imitator", "--yes"); r.code != 12 {
		t.Fatalf("--yes approved an imitation: %d\n%s", r.code, r.stdout)
	}
	unnamed := args[:len(args)-2] // without --tool search_nodes
	if r := runEtdi(t, t.TempDir(), append(pwEnv, "PATH="+os.Getenv("PATH")), unnamed...); r.code != 12 ||
		!strings.Contains(r.stdout, "NOT approved search_nodes (shadowing)") || !strings.Contains(r.stdout, "approve it by name: etdi "+strings.Join(args, " ")) {
		t.Fatalf("pin approve without --tool: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runEtdi(t, t.TempDir(), append(pwEnv, "PATH="+os.Getenv("PATH")), args...); r.code != 0 ||
		!strings.Contains(r.stdout, "approved unsigned:imitator/search_nodes") {
		t.Fatalf("printed command: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The same package under a second configuration name: approved once.
	if r := check("files", "--yes"); r.code != 0 {
		t.Fatalf("files: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := check("files-again", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"approvedAs": "unsigned:files"`) {
		t.Fatalf("files-again: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A changed definition from the same artifact under a second name
	// without pins of its own: a rug pull of that tool (11), not a shadow.
	r = check("weather-changed")
	if r.code != 11 || !strings.Contains(r.stdout, "rug_pull: unsigned tool unsigned:weather-changed/get_weather: definition differs from the one approved on unsigned:weather") ||
		strings.Contains(r.stdout, "shadowing") || !strings.Contains(r.stdout, "--name weather-changed --tool get_weather") {
		t.Fatalf("changed under a second name: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A tool signed by a provider, copied by a server that provider did not
// sign, and a look-alike name: impersonation (12), which --yes does not
// approve; the finding names the command that does.
func TestCollisionImpersonation(t *testing.T) {
	p := liveEnv(t)
	p.ok("trust", "unsigned", "--policy", "trust.json", "warn")
	cfg := collisionConfig(p, t.TempDir())
	if r := p.liveCheck(nil, append([]string{"--yes", "--bundle", "w.etdi.json"}, fixture("signed")...)...); r.code != 0 {
		t.Fatalf("signed: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := p.liveCheck(nil, "--config", cfg, "--name", "weather", "--yes")
	if r.code != 12 || !strings.Contains(r.stdout, "shadowing: tool unsigned:weather/get_weather") ||
		!strings.Contains(r.stdout, "is signed by") || !strings.Contains(r.stdout, "--config "+cfg+" --name weather --tool get_weather") {
		t.Fatalf("signed tool copied: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	p.write("lookalike.json", `{"tools":[{"name":"get_weathеr","description":"Weather."}]}`)
	r = p.liveCheck(nil, "--tools", "lookalike.json", "--name", "lookalike", "--yes")
	if r.code != 12 || !strings.Contains(r.stdout, "confusable_name: ") ||
		!strings.Contains(r.stdout, "--tools "+filepath.Join(p.dir, "lookalike.json")+" --name lookalike --tool 'get_weathеr'") {
		t.Fatalf("look-alike: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
