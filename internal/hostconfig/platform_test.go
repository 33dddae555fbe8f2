package hostconfig

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hostFile is one host's configuration file written under a temporary
// home for one platform.
type hostFile struct {
	host    string
	rel     string // path below root
	content string
}

const (
	stdioJSON = `{"mcpServers": {"%s": {"command": "srv-%s", "args": ["--flag"], "env": {"K": "v"}}}}`
)

func jsonEntry(name string) string {
	return strings.ReplaceAll(stdioJSON, "%s", name)
}

// TestLocationsPerPlatform writes each host's file where that host keeps it
// on Linux, macOS and Windows (given only through the platform's
// environment variables) and checks that Discover finds it, whatever OS
// runs the test.
func TestLocationsPerPlatform(t *testing.T) {
	type platform struct {
		goos string
		// env returns the platform's variables for a temporary root.
		env   func(root string) map[string]string
		home  func(root string) string
		files []hostFile
	}
	common := func(home string) []hostFile {
		return []hostFile{
			{ClaudeCode, filepath.Join(home, ".claude.json"), jsonEntry("claude-code")},
			{Cursor, filepath.Join(home, ".cursor", "mcp.json"), jsonEntry("cursor")},
			{Windsurf, filepath.Join(home, ".codeium", "windsurf", "mcp_config.json"), jsonEntry("windsurf")},
			{Gemini, filepath.Join(home, ".gemini", "settings.json"), `{"mcpServers": {"gemini": {"httpUrl": "https://g.example/mcp"}}}`},
			{Kiro, filepath.Join(home, ".kiro", "settings", "mcp.json"), jsonEntry("kiro")},
			{AmazonQ, filepath.Join(home, ".aws", "amazonq", "mcp.json"), jsonEntry("amazonq")},
			{Codex, filepath.Join(home, ".codex", "config.toml"), "[mcp_servers.codex]\ncommand = \"srv-codex\"\nargs = [\"--flag\"]\nenv = { K = \"v\" }\n"},
		}
	}
	appDataFiles := func(appData, zed string) []hostFile {
		return []hostFile{
			{ClaudeDesktop, filepath.Join(appData, "Claude", "claude_desktop_config.json"), jsonEntry("claude-desktop")},
			{VSCode, filepath.Join(appData, "Code", "User", "mcp.json"), `{"servers": {"vscode": {"type": "stdio", "command": "srv-vscode"}}}`},
			{VSCode, filepath.Join(appData, "Code", "User", "settings.json"), `{"editor.fontSize": 12, "mcp": {"servers": {"vscode-settings": {"command": "srv-vs"}}}}`},
			{VSCode, filepath.Join(appData, "Code - Insiders", "User", "mcp.json"), `{"servers": {"vscode-insiders": {"url": "https://i.example/mcp"}}}`},
			{Cline, filepath.Join(appData, "Code", "User", "globalStorage", "saoudrizwan.claude-dev", "settings", "cline_mcp_settings.json"),
				`{"mcpServers": {"cline": {"command": "srv-cline", "disabled": false}, "cline-off": {"command": "x", "disabled": true}}}`},
			{Zed, filepath.Join(zed, "settings.json"), `// Zed settings
{"theme": "One Dark", "context_servers": {"zed": {"source": "custom", "command": "srv-zed", "args": []},
  "zed-old": {"command": {"path": "srv-zed-old", "args": ["-v"], "env": {}}}}}`},
		}
	}
	platforms := []platform{
		{goos: "linux",
			env: func(root string) map[string]string {
				return map[string]string{"XDG_CONFIG_HOME": filepath.Join(root, "xdg")}
			},
			home:  func(root string) string { return filepath.Join(root, "home") },
			files: append(common("home"), appDataFiles("xdg", filepath.Join("xdg", "zed"))...)},
		{goos: "darwin",
			env:   func(root string) map[string]string { return map[string]string{} },
			home:  func(root string) string { return filepath.Join(root, "home") },
			files: append(common("home"), appDataFiles(filepath.Join("home", "Library", "Application Support"), filepath.Join("home", ".config", "zed"))...)},
		{goos: "windows",
			env: func(root string) map[string]string {
				return map[string]string{"USERPROFILE": filepath.Join(root, "profile"), "APPDATA": filepath.Join(root, "profile", "AppData", "Roaming")}
			},
			// HOME is not where Windows hosts look: USERPROFILE is.
			home:  func(root string) string { return filepath.Join(root, "wrong-home") },
			files: append(common("profile"), appDataFiles(filepath.Join("profile", "AppData", "Roaming"), filepath.Join("profile", "AppData", "Roaming", "Zed"))...)},
	}
	for _, p := range platforms {
		t.Run(p.goos, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range p.files {
				path := filepath.Join(root, f.rel)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(f.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			o := Options{Home: p.home(root), Cwd: filepath.Join(root, "nowhere"), Lookup: env(p.env(root))}
			entries, found, searched, err := Discover(p.goos, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != len(p.files) {
				t.Errorf("found %d of %d files: %v\nsearched %v", len(found), len(p.files), found, searched)
			}
			m := byName(entries)
			want := map[string]string{
				"claude-code": ClaudeCode, "cursor": Cursor, "windsurf": Windsurf, "gemini": Gemini, "kiro": Kiro,
				"amazonq": AmazonQ, "codex": Codex, "claude-desktop": ClaudeDesktop, "vscode": VSCode,
				"vscode-settings": VSCode, "vscode-insiders": VSCode, "cline": Cline, "zed": Zed, "zed-old": Zed,
			}
			for name, host := range want {
				e, ok := m[name]
				if !ok {
					t.Errorf("%s: entry %q not found", p.goos, name)
					continue
				}
				if e.Host != host || e.Project {
					t.Errorf("%s: entry %q: host %q project %v, want %q", p.goos, name, e.Host, e.Project, host)
				}
				if e.Line == 0 {
					t.Errorf("%s: entry %q has no line", p.goos, name)
				}
			}
			if off, ok := m["cline-off"]; !ok || !off.NotStarted() || off.Command != "" || off.Transport != "" {
				t.Errorf("a disabled entry Cline does not start: %+v", off)
			}
			if len(entries) != len(want)+1 {
				t.Errorf("%d entries, want %d: %v", len(entries), len(want), entries)
			}
			if c := m["codex"]; c.Command != "srv-codex" || !slices.Equal(c.Args, []string{"--flag"}) || c.Env["K"] != "v" || c.Transport != "stdio" {
				t.Errorf("codex entry: %+v", c)
			}
			if z := m["zed-old"]; z.Command != "srv-zed-old" || !slices.Equal(z.Args, []string{"-v"}) {
				t.Errorf("zed (command object): %+v", z)
			}
			if g := m["gemini"]; g.Transport != "http" || g.URL != "https://g.example/mcp" {
				t.Errorf("gemini: %+v", g)
			}
		})
	}
}

// TestProjectFilesMarked: files in the working directory are marked as
// project-scoped, for every host that reads one.
func TestProjectFilesMarked(t *testing.T) {
	root := t.TempDir()
	cwd := filepath.Join(root, "repo")
	for _, rel := range []string{".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json", ".gemini/settings.json", ".kiro/settings/mcp.json", ".amazonq/mcp.json"} {
		path := filepath.Join(cwd, rel)
		os.MkdirAll(filepath.Dir(path), 0o755)
		name := strings.NewReplacer("/", "-", ".", "").Replace(rel)
		body := jsonEntry(name)
		if strings.HasPrefix(rel, ".vscode") {
			body = `{"servers": {"` + name + `": {"command": "x"}}}`
		}
		os.WriteFile(path, []byte(body), 0o644)
	}
	entries, found, _, err := Discover("linux", Options{Home: filepath.Join(root, "home"), Cwd: cwd, Lookup: env(nil)})
	if err != nil || len(found) != 6 || len(entries) != 6 {
		t.Fatalf("discover: %v %v %v", entries, found, err)
	}
	for _, e := range entries {
		if !e.Project {
			t.Errorf("%s from %s is not marked as project-scoped", e.Name, e.File)
		}
	}
}

func TestCodexHTTPAndErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.toml")
	os.WriteFile(p, []byte(`model = "x"

[mcp_servers.remote]
url = "https://r.example/mcp"
bearer_token_env_var = "R_TOKEN"
http_headers = { "X-Team" = "blue" }
env_http_headers = { "X-Key" = "R_KEY" }

[mcp_servers.off]
command = "x"
enabled = false
`), 0o644)
	es, err := Load(p, "", Options{Lookup: env(map[string]string{"R_TOKEN": "tok"})})
	if err != nil || len(es) != 2 {
		t.Fatalf("%v %v", es, err)
	}
	if off := es[0]; off.Name != "off" || !off.NotStarted() || off.Command != "" {
		t.Fatalf("off: %+v", off)
	}
	r := es[1]
	if r.Transport != "http" || r.Headers["Authorization"] != "Bearer tok" || r.Headers["X-Team"] != "blue" || r.Line != 3 {
		t.Fatalf("remote: %+v", r)
	}
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "R_KEY, which is not set") {
		t.Fatalf("problems: %v", r.Problems)
	}
	// Duplicate tables are refused with a position.
	os.WriteFile(p, []byte("[mcp_servers.a]\ncommand = \"x\"\n[mcp_servers.a]\ncommand = \"y\"\n"), 0o644)
	if _, err := Load(p, "", Options{}); err == nil || !strings.Contains(err.Error(), "config.toml:3:") {
		t.Fatalf("duplicate table: %v", err)
	}
}

// TestJSONCErrorPosition: an error in a file with comments is reported at
// the line and column of the original file.
func TestJSONCErrorPosition(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(p, []byte("{\n  // a comment /* with */ words\n  /* a block\n     comment */ \"servers\": {\n    \"a\": {\"command\": \"x\",, }\n  }\n}\n"), 0o644)
	_, err := Load(p, VSCode, Options{})
	if err == nil || !strings.Contains(err.Error(), "mcp.json:5:28:") {
		t.Fatalf("error %v, want it at line 5 column 28", err)
	}
}

// TestInputs: ${input:ID} takes a value only from the user; without one it
// stays a problem naming the flag.
func TestInputs(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".vscode", "mcp.json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(`{"inputs": [{"id": "token", "type": "promptString", "password": true}],
 "servers": {"gh": {"url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${input:token}"}},
             "other": {"command": "x", "env": {"A": "${input:missing}"}}}}`), 0o644)
	es, err := Load(p, "", Options{Inputs: map[string]string{"token": "t0k"}})
	if err != nil {
		t.Fatal(err)
	}
	m := byName(es)
	if gh := m["gh"]; gh.Headers["Authorization"] != "Bearer t0k" || len(gh.Problems) != 0 {
		t.Fatalf("gh: %+v", gh)
	}
	if o := m["other"]; len(o.Problems) != 1 || !strings.Contains(o.Problems[0], "--input missing=VALUE") || o.Env["A"] != "${input:missing}" {
		t.Fatalf("other: %+v", o)
	}
}
