package hostconfig

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func byName(es []Entry) map[string]Entry {
	out := map[string]Entry{}
	for _, e := range es {
		out[e.Name] = e
	}
	return out
}

func TestClaudeDesktop(t *testing.T) {
	es, err := Load("testdata/claude_desktop_config.json", "", Options{Home: "/home/u", Cwd: "/tmp", Lookup: env(map[string]string{"WEATHER_KEY": "s3cret"})})
	if err != nil {
		t.Fatal(err)
	}
	m := byName(es)
	w := m["weather"]
	if w.Host != ClaudeDesktop || w.Command != "node" || !slices.Equal(w.Args, []string{"server.js", "--port", "0"}) || w.Env["API_KEY"] != "s3cret" || w.Transport != "stdio" || len(w.Problems) != 0 {
		t.Fatalf("weather: %+v", w)
	}
	if f := m["files"]; f.Args[2] != "/srv" {
		t.Errorf("default value not used: %v", f.Args)
	}
	// Without the variable: reported, not guessed.
	es, _ = Load("testdata/claude_desktop_config.json", "", Options{Home: "/home/u", Cwd: "/tmp", Lookup: env(nil)})
	w = byName(es)["weather"]
	if len(w.Problems) != 1 || !strings.Contains(w.Problems[0], "WEATHER_KEY, which is not set") || w.Env["API_KEY"] != "${WEATHER_KEY}" {
		t.Fatalf("missing env: %+v", w.Problems)
	}
}

func TestVSCodeJSONC(t *testing.T) {
	path := "testdata/project/.vscode/mcp.json"
	es, err := Load(path, "", Options{Home: "/home/u", Cwd: "/elsewhere", Lookup: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	m := byName(es)
	gh := m["github"]
	if gh.Host != VSCode || gh.Transport != "http" || gh.URL != "https://api.example.com/mcp/" || len(gh.Problems) != 1 || !strings.Contains(gh.Problems[0], "${input:token}") {
		t.Fatalf("github: %+v", gh)
	}
	local := m["local"]
	abs, _ := filepath.Abs("testdata/project")
	_ = abs
	if !strings.HasSuffix(local.Command, "testdata/project/bin/server") || len(local.Problems) != 0 {
		t.Fatalf("workspaceFolder: %+v", local)
	}
}

func TestOtherHosts(t *testing.T) {
	es, err := Load("testdata/project/.cursor/mcp.json", "", Options{Home: "/h", Cwd: "/c", Lookup: env(map[string]string{"SEARCH_KEY": "k"})})
	if err != nil || len(es) != 1 || es[0].Host != Cursor || es[0].URL != "http://127.0.0.1:3001/mcp" || es[0].Headers["X-Key"] != "k" {
		t.Fatalf("cursor: %+v %v", es, err)
	}
	es, _ = Load("testdata/mcp_config.json", "", Options{Home: "/h", Cwd: "/c", Lookup: env(nil)})
	m := byName(es)
	if m["remote"].URL != "https://windsurf.example/mcp" || m["remote"].Transport != "http" || m["remote"].Host != Windsurf {
		t.Errorf("windsurf serverUrl: %+v", m["remote"])
	}
	if len(m["broken"].Problems) == 0 {
		t.Error("entry without command or URL has no problem")
	}
	es, _ = Load("testdata/settings.json", "", Options{Home: "/h", Cwd: "/c", Lookup: env(nil)})
	m = byName(es)
	if m["gem"].URL != "http://127.0.0.1:9/mcp" || m["gem"].Transport != "http" || m["gem"].Host != Gemini {
		t.Errorf("gemini httpUrl: %+v", m["gem"])
	}
	if m["old"].Transport != "sse" || len(m["old"].Problems) == 0 {
		t.Errorf("gemini SSE url: %+v", m["old"])
	}
}

func TestClaudeCodeProjects(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	os.Mkdir(proj, 0o755)
	data, _ := os.ReadFile("testdata/dot.claude.json")
	os.WriteFile(filepath.Join(dir, ".claude.json"), []byte(strings.ReplaceAll(string(data), "PROJECT", proj)), 0o644)
	es, err := Load(filepath.Join(dir, ".claude.json"), "", Options{Home: dir, Cwd: proj, Lookup: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	m := byName(es)
	if m["user-level"].Command != "uvx" || m["project-level"].Command != "node" || m["project-level"].Host != ClaudeCode {
		t.Fatalf("claude code: %+v", es)
	}
	// Discover finds it, and the project's .mcp.json.
	os.WriteFile(filepath.Join(proj, ".mcp.json"), []byte(`{"mcpServers":{"team":{"command":"team-server"}}}`), 0o644)
	found, files, _, err := Discover("linux", Options{Home: dir, Cwd: proj, Lookup: env(map[string]string{"XDG_CONFIG_HOME": filepath.Join(dir, "cfg")})})
	if err != nil || len(files) != 2 || len(found) != 3 {
		t.Fatalf("discover: %v %v %v", found, files, err)
	}
	if m := byName(found); !m["team"].Project || m["project-level"].Project || m["user-level"].Project {
		t.Fatalf("project marks: %+v", found)
	}
}

func TestStripJSONC(t *testing.T) {
	in := `{"a": "http://x//y", /* c */ "b": [1, 2,], // end
	"c": "\"//\"",}`
	got := string(StripJSONC([]byte(in)))
	if len(got) != len(in) || strings.Count(got, "\n") != strings.Count(in, "\n") {
		t.Errorf("StripJSONC moved offsets: %q", got)
	}
	for _, want := range []string{`"http://x//y"`, `[1, 2 ]`, `"\"//\""`} {
		if !strings.Contains(got, want) {
			t.Errorf("StripJSONC lost %s: %s", want, got)
		}
	}
	if strings.Contains(got, "/* c */") || strings.Contains(got, "// end") {
		t.Errorf("comments kept: %s", got)
	}
}

func TestDuplicateKeysRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	os.WriteFile(p, []byte(`{"mcpServers":{"a":{"command":"x"},"a":{"command":"y"}}}`), 0o644)
	if _, err := Load(p, "", Options{Home: "/h", Cwd: "/c", Lookup: env(nil)}); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("duplicate server names: %v", err)
	}
}

// An entry's line is where its name is written in the server list it was
// read from: not an earlier member of the same name elsewhere (an env
// variable, another list), and found under JSON escapes and comments.
func TestEntryLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	text := `{
  // "weather": a comment naming the entry
  "inputs": {"weather": {"x": 1}},
  "mcpServers": {
    "other": {"command": "a", "env": {"weather": "1"}},
    "weather": {
      "command": "srv"
    },
    "caf\u00e9": {"command": "b"}
  }
}`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	es, err := Load(path, "", Options{Home: "/h", Cwd: "/c", Lookup: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range es {
		got[e.Name] = e.Line
	}
	if want := map[string]int{"other": 5, "weather": 6, "café": 9}; !maps.Equal(got, want) {
		t.Fatalf("lines %v, want %v", got, want)
	}
}
