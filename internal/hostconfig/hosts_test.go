package hostconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/redact"
)

// hostTableFile is where a host keeps a project's (or the user's) file, under
// root, and how its server list is written.
type hostTableFile struct {
	host, path, list string
}

var hostTable = []hostTableFile{
	{ClaudeDesktop, "app/Claude/claude_desktop_config.json", "mcpServers"},
	{ClaudeCode, "repo/.mcp.json", "mcpServers"},
	{Cursor, "repo/.cursor/mcp.json", "mcpServers"},
	{VSCode, "repo/.vscode/mcp.json", "servers"},
	{Windsurf, "home/.codeium/windsurf/mcp_config.json", "mcpServers"},
	{Gemini, "repo/.gemini/settings.json", "mcpServers"},
	{Zed, "repo/.zed/settings.json", "context_servers"},
	{Cline, "home/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json", "mcpServers"},
	{Kiro, "repo/.kiro/settings/mcp.json", "mcpServers"},
	{AmazonQ, "repo/.amazonq/mcp.json", "mcpServers"},
}

// writeHost writes a host's file with one entry and returns its path.
func writeHost(t *testing.T, root string, h hostTableFile, entry string) string {
	t.Helper()
	p := filepath.Join(root, h.path)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(`{"`+h.list+`": {"srv": `+entry+`}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func loadHostEntry(t *testing.T, p, host string, o Options) Entry {
	t.Helper()
	es, err := Load(p, host, o)
	if err != nil || len(es) != 1 {
		t.Fatalf("%s: %v %v", p, es, err)
	}
	return es[0]
}

// Every host etdi reads has its row, with where its facts were read.
func TestHostTableComplete(t *testing.T) {
	for _, h := range []string{ClaudeDesktop, ClaudeCode, Cursor, VSCode, Windsurf, Gemini, Zed, Cline, Kiro, AmazonQ, Codex} {
		l := LaunchOf(h)
		if l.Host != h || l.Source == "" || l.Name == "" || l.Both == "" || len(l.URLKeys) == 0 {
			t.Errorf("%s: incomplete row %+v", h, l)
		}
		if l.Honours == Yes && l.Disabled == "" {
			t.Errorf("%s honours a member it does not name", h)
		}
	}
	if LaunchOf("nobody").Honours != Unknown || LaunchOf("").URLFirst {
		t.Error("a file of no known host must be read the safe way")
	}
}

// A command beside a URL (or a type that says the other) is ambiguous on
// every host whose precedence is not established: never started as the
// command, and wrap refuses it naming the file, the entry and the
// members.
func TestCommandAndURLAmbiguous(t *testing.T) {
	entries := map[string]string{
		"url":       `{"command": "node", "args": ["s.js"], "url": "http://127.0.0.1:1/mcp"}`,
		"serverUrl": `{"command": "node", "serverUrl": "http://127.0.0.1:1/mcp"}`,
		"type http": `{"type": "http", "command": "node", "url": "http://127.0.0.1:1/mcp"}`,
		"type only": `{"type": "http", "command": "node"}`,
		"stdio url": `{"type": "stdio", "url": "http://127.0.0.1:1/mcp"}`,
		"unknown":   `{"type": "websocket", "command": "node"}`,
		"two urls":  `{"url": "http://127.0.0.1:1/a", "serverUrl": "http://127.0.0.1:1/b"}`,
	}
	for _, h := range hostTable {
		if h.host == Gemini {
			continue // its precedence is established: TestGeminiPrecedence
		}
		for what, entry := range entries {
			if h.host == ClaudeCode || h.host == VSCode {
				if what == "serverUrl" || what == "two urls" {
					continue // a member the host does not read
				}
			}
			root := t.TempDir()
			p := writeHost(t, root, h, entry)
			e := loadHostEntry(t, p, h.host, Options{Cwd: filepath.Join(root, "repo"), Lookup: env(map[string]string{"PATH": "/usr/bin:/bin"})})
			if e.Ambiguous == "" || e.Transport != "" {
				t.Errorf("%s %s: not ambiguous: %+v", h.host, what, e)
				continue
			}
			data, _ := os.ReadFile(p)
			res, err := Wrap(p, data, WrapOptions{Host: h.host, Etdi: testEtdi})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Outcomes) != 1 || res.Outcomes[0].Status != StatusRefused || string(res.Data) != string(data) ||
				!strings.Contains(res.Outcomes[0].Reason, p) || !strings.Contains(res.Outcomes[0].Reason, `"srv"`) ||
				!strings.Contains(res.Outcomes[0].Reason, "ambiguous for "+LaunchOf(h.host).Name) {
				t.Errorf("%s %s: wrap %+v", h.host, what, res.Outcomes)
			}
		}
	}
}

// The harmless forms stay unambiguous on every host.
func TestOneServerNotAmbiguous(t *testing.T) {
	for _, h := range hostTable {
		for _, entry := range []string{`{"command": "node", "args": ["s.js"]}`, `{"type": "stdio", "command": "node"}`, `{"type": "http", "url": "http://127.0.0.1:1/mcp"}`} {
			if h.host == Cline && strings.Contains(entry, `"http"`) {
				continue // Cline calls it streamableHttp
			}
			root := t.TempDir()
			e := loadHostEntry(t, writeHost(t, root, h, entry), h.host, Options{Cwd: filepath.Join(root, "repo")})
			if e.Ambiguous != "" || e.Transport == "" || len(e.Ignored) > 0 {
				t.Errorf("%s %s: %+v", h.host, entry, e)
			}
		}
	}
}

// Gemini CLI connects to httpUrl, then url, before it starts a command
// (mcp-client.ts): etdi checks the URL, and wrap refuses to leave the
// command in place.
func TestGeminiPrecedence(t *testing.T) {
	gem := hostTable[5]
	for _, c := range []struct{ entry, url, transport string }{
		{`{"command": "node", "args": ["s.js"], "httpUrl": "http://127.0.0.1:1/h"}`, "http://127.0.0.1:1/h", "http"},
		{`{"url": "http://127.0.0.1:1/u", "httpUrl": "http://127.0.0.1:1/h"}`, "http://127.0.0.1:1/h", "http"},
		{`{"command": "node", "type": "http", "url": "http://127.0.0.1:1/u"}`, "http://127.0.0.1:1/u", "http"},
		{`{"command": "node", "url": "http://127.0.0.1:1/u"}`, "http://127.0.0.1:1/u", "sse"},
	} {
		root := t.TempDir()
		p := writeHost(t, root, gem, c.entry)
		e := loadHostEntry(t, p, Gemini, Options{Cwd: root, Lookup: env(map[string]string{"PATH": "/usr/bin"})})
		if e.Ambiguous != "" || e.URL != c.url || e.Command != "" || e.Args != nil || e.Transport != c.transport || e.Program != "" {
			t.Errorf("%s: %+v", c.entry, e)
		}
		if strings.Contains(c.entry, "command") && !slices.Contains(e.Ignored, "command") {
			t.Errorf("%s: the ignored command is not said: %v", c.entry, e.Ignored)
		}
		if strings.Contains(c.entry, "command") {
			data, _ := os.ReadFile(p)
			res, err := Wrap(p, data, WrapOptions{Host: Gemini, Etdi: testEtdi})
			if err != nil || res.Outcomes[0].Status != StatusRefused || !strings.Contains(res.Outcomes[0].Reason, "Gemini CLI connects to") {
				t.Errorf("%s: wrap %+v %v", c.entry, res, err)
			}
		}
	}
	// An empty URL member: Gemini CLI tests its value, so it starts the
	// command or connects to the next URL instead.
	for _, entry := range []string{`{"command": "node", "httpUrl": ""}`, `{"command": "node", "url": ""}`,
		`{"httpUrl": "", "url": "http://127.0.0.1:1/u"}`} {
		p := writeHost(t, t.TempDir(), gem, entry)
		if e := loadHostEntry(t, p, Gemini, Options{Lookup: env(map[string]string{"PATH": "/usr/bin"})}); e.Ambiguous == "" || e.Transport != "" {
			t.Errorf("%s: %+v", entry, e)
		}
		data, _ := os.ReadFile(p)
		if res, err := Wrap(p, data, WrapOptions{Host: Gemini, Etdi: testEtdi}); err != nil || res.Outcomes[0].Status != StatusRefused || !strings.Contains(res.Outcomes[0].Reason, "is empty") {
			t.Errorf("%s: wrap %+v %v", entry, res, err)
		}
	}
	// A type Gemini CLI does not know, or one that contradicts httpUrl.
	for _, entry := range []string{`{"type": "ws", "url": "http://127.0.0.1:1/u"}`, `{"type": "sse", "httpUrl": "http://127.0.0.1:1/h"}`} {
		if e := loadHostEntry(t, writeHost(t, t.TempDir(), gem, entry), Gemini, Options{}); e.Ambiguous == "" {
			t.Errorf("%s: %+v", entry, e)
		}
	}
}

// Codex CLI refuses a table with both command and url: so does etdi.
func TestCodexCommandAndURL(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(p, []byte("[mcp_servers.srv]\ncommand = \"node\"\nurl = \"http://127.0.0.1:1/mcp\"\n"), 0o644)
	e := loadHostEntry(t, p, Codex, Options{})
	if e.Ambiguous == "" || !strings.Contains(e.Ambiguous, "refuses") {
		t.Fatalf("%+v", e)
	}
	data, _ := os.ReadFile(p)
	res, err := Wrap(p, data, WrapOptions{Host: Codex, Etdi: testEtdi})
	if err != nil || res.Outcomes[0].Status != StatusRefused || string(res.Data) != string(data) {
		t.Fatalf("%+v %v", res, err)
	}
}

// A disabled entry is read and checked where the host may start it, and
// left alone only where the host is known to honour the member it is
// disabled by.
func TestDisabledPerHost(t *testing.T) {
	for _, c := range []struct {
		host, entry string
		want        Fact
	}{
		{ClaudeCode, `{"command": "node", "disabled": true}`, No},
		{Gemini, `{"command": "node", "disabled": true}`, No},
		{VSCode, `{"command": "node", "enabled": false}`, No},
		{Cursor, `{"command": "node", "disabled": true}`, Unknown},
		{Zed, `{"command": "node", "enabled": false}`, Unknown},
		{Cline, `{"command": "node", "disabled": true}`, Yes},
		{Cline, `{"command": "node", "enabled": false}`, No}, // Cline reads disabled only
		{Kiro, `{"command": "node", "disabled": true}`, Yes},
		{AmazonQ, `{"command": "node", "disabled": true}`, Unknown},
	} {
		var h hostTableFile
		for _, x := range hostTable {
			if x.host == c.host {
				h = x
			}
		}
		root := t.TempDir()
		p := writeHost(t, root, h, c.entry)
		e := loadHostEntry(t, p, c.host, Options{Cwd: filepath.Join(root, "repo")})
		if !e.Disabled || e.HostHonoursDisabled != c.want {
			t.Errorf("%s %s: disabled %v honoured %q, want %q", c.host, c.entry, e.Disabled, e.HostHonoursDisabled, c.want)
		}
		if started := e.Command == "node" && e.Transport == "stdio"; started == (c.want == Yes) || e.NotStarted() != (c.want == Yes) {
			t.Errorf("%s %s: read for starting %v, NotStarted %v", c.host, c.entry, started, e.NotStarted())
		}
		data, _ := os.ReadFile(p)
		res, err := Wrap(p, data, WrapOptions{Host: c.host, Etdi: testEtdi})
		if err != nil {
			t.Fatal(err)
		}
		want := StatusWrapped
		if c.want == Yes {
			want = StatusDisabled
		}
		if res.Outcomes[0].Status != want {
			t.Errorf("%s %s: wrap %+v, want %s", c.host, c.entry, res.Outcomes, want)
		}
		if want == StatusWrapped {
			es, err := loadData(p, res.Data, c.host, Options{Gate: testGate()})
			if err != nil || !es[0].Wrapped || !es[0].Disabled {
				t.Errorf("%s: the wrapped entry %+v %v", c.host, es, err)
			}
		}
	}
	// Codex CLI honours enabled = false.
	p := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(p, []byte("[mcp_servers.srv]\ncommand = \"node\"\nenabled = false\n"), 0o644)
	if e := loadHostEntry(t, p, Codex, Options{}); !e.NotStarted() || e.Command != "" {
		t.Errorf("codex: %+v", e)
	}
	data, _ := os.ReadFile(p)
	if res, err := Wrap(p, data, WrapOptions{Host: Codex, Etdi: testEtdi}); err != nil || res.Outcomes[0].Status != StatusDisabled {
		t.Errorf("codex wrap: %+v %v", res, err)
	}
}

// exe writes an executable file.
func exe(t *testing.T, p string) string {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// The program is found as the host finds it: on the entry's env PATH
// when it sets one, else on the host's own; a relative path in the
// directory the host starts the server in; never on another PATH.
func TestProgramAsHostFindsIt(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("executable bits")
	}
	root := t.TempDir()
	hostBin := filepath.Dir(exe(t, filepath.Join(root, "hostbin", "srv")))
	repo := filepath.Join(root, "repo")
	repoSrv := exe(t, filepath.Join(repo, "bin", "srv"))
	hostEnv := env(map[string]string{"PATH": hostBin})
	cc := hostTable[1]
	load := func(h hostTableFile, entry string) Entry {
		return loadHostEntry(t, writeHost(t, root, h, entry), h.host, Options{Cwd: repo, Lookup: hostEnv, Gate: testGate()})
	}
	// Harmless: no env PATH, the host's own PATH: no finding.
	if e := load(cc, `{"command": "srv"}`); e.Program != filepath.Join(hostBin, "srv") || e.Unresolved != "" || len(e.Problems) > 0 || e.Dir != repo {
		t.Errorf("host PATH: %+v", e)
	}
	// The entry's env PATH is the one the host searches.
	if e := load(cc, `{"command": "srv", "env": {"PATH": "`+filepath.Join(repo, "bin")+`"}}`); e.Program != repoSrv {
		t.Errorf("entry PATH: %+v", e)
	}
	// ... also when it extends the host's.
	if e := load(cc, `{"command": "srv", "env": {"PATH": "`+filepath.Join(repo, "bin")+`:${PATH}"}}`); e.Program != repoSrv {
		t.Errorf("entry PATH before the host's: %+v", e)
	}
	// A relative PATH entry holding the program: etdi cannot tell.
	if e := load(cc, `{"command": "srv", "env": {"PATH": "bin:`+hostBin+`"}}`); e.Program != "" || !strings.Contains(e.Unresolved, "relative PATH entry") {
		t.Errorf("relative PATH entry: %+v", e)
	}
	// An empty PATH entry, too (the host's directory).
	exe(t, filepath.Join(repo, "srv"))
	if e := load(cc, `{"command": "srv", "env": {"PATH": ":`+hostBin+`"}}`); e.Unresolved == "" {
		t.Errorf("empty PATH entry: %+v", e)
	}
	// Not on the PATH the entry sets: the host cannot start it either.
	if e := load(cc, `{"command": "srv", "env": {"PATH": "`+filepath.Join(root, "empty")+`"}}`); e.Program != "" || len(e.Problems) != 1 || !strings.Contains(e.Problems[0], "cannot start") {
		t.Errorf("not found: %+v", e)
	}
	// A relative program: Claude Code starts it in the project folder.
	if e := load(cc, `{"command": "bin/srv"}`); e.Program != repoSrv {
		t.Errorf("relative program: %+v", e)
	}
	// Gemini CLI in the entry's cwd, relative to the project.
	if e := load(hostTable[5], `{"command": "./srv", "cwd": "bin"}`); e.Program != repoSrv || e.Dir != filepath.Join(repo, "bin") {
		t.Errorf("gemini cwd: %+v", e)
	}
	// Cursor: where it starts a server is not established.
	if e := load(hostTable[2], `{"command": "bin/srv"}`); e.Program != "" || !strings.Contains(e.Unresolved, "not established") {
		t.Errorf("cursor relative program: %+v", e)
	}
	if e := load(hostTable[2], `{"command": "srv"}`); e.Program != filepath.Join(hostBin, "srv") {
		t.Errorf("cursor on the host's PATH: %+v", e)
	}
	// A wrapped entry's server is found the same way (etdi run starts
	// it with the environment the host gives etdi).
	if e := load(cc, `{"command": `+jsonString(testEtdi)+`, "args": ["run", "--name", "srv", "--", "srv"], "env": {"PATH": "`+filepath.Join(repo, "bin")+`"}}`); !e.Wrapped || e.Program != repoSrv {
		t.Errorf("wrapped: %+v", e)
	}
	// Codex CLI: its cwd member, relative to the project.
	p := filepath.Join(root, "codex", "config.toml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("[mcp_servers.srv]\ncommand = \"./srv\"\ncwd = \""+filepath.Join(repo, "bin")+"\"\n"), 0o644)
	if e := loadHostEntry(t, p, Codex, Options{Cwd: repo, Lookup: hostEnv}); e.Program != repoSrv {
		t.Errorf("codex cwd: %+v", e)
	}
}

func TestLookPath(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("executable bits")
	}
	root := t.TempDir()
	srv := exe(t, filepath.Join(root, "a", "srv"))
	os.MkdirAll(filepath.Join(root, "b"), 0o755)
	os.WriteFile(filepath.Join(root, "b", "srv"), nil, 0o644) // not executable
	os.MkdirAll(filepath.Join(root, "c", "srv"), 0o755)       // a directory
	for _, c := range []struct {
		name, path, dir, prog string
		unsure                bool
	}{
		{"srv", filepath.Join(root, "c") + ":" + filepath.Join(root, "a"), "", srv, false},
		{"srv", filepath.Join(root, "b") + ":" + filepath.Join(root, "a"), "", srv, false},
		{filepath.Join(root, "b", "srv"), "", "", "", false},
		{"srv", filepath.Join(root, "nothing"), "", "", false},
		{"srv", "", "/nonexistent-dir", "", false},
		{"srv", "", filepath.Join(root, "a"), "", true},
		{"srv", "", "", "", true},
		{"srv", "a", root, "", true},
		{"srv", "a", "", "", true},
		{"srv", "nothing:" + filepath.Join(root, "a"), root, srv, false},
		{"a/srv", "", root, srv, false},
		{"a/srv", "", "", "", true},
		{srv, "", "", srv, false},
		{"", "/usr/bin", "", "", false},
		{"s\x00rv", "/usr/bin", "", "", false},
	} {
		prog, why, unsure := LookPath(c.name, c.path, c.dir)
		if prog != c.prog || unsure != c.unsure || (prog == "") == (why == "") {
			t.Errorf("LookPath(%q, %q, %q) = %q, %q, %v", c.name, c.path, c.dir, prog, why, unsure)
		}
	}
}

// Gemini CLI expands $NAME as well as ${NAME}, and leaves an unset $NAME
// as written.
func TestGeminiExpandsBareVariables(t *testing.T) {
	e := loadHostEntry(t, writeHost(t, t.TempDir(), hostTable[5], `{"command": "node", "args": ["$TOOL_DIR/s.js", "$UNSET_X", "${TOOL_DIR}"]}`), Gemini,
		Options{Lookup: env(map[string]string{"TOOL_DIR": "/t"})})
	if !slices.Equal(e.Args, []string{"/t/s.js", "$UNSET_X", "/t"}) || len(e.Problems) > 0 {
		t.Errorf("%+v", e)
	}
	// Other hosts take $NAME as written.
	e = loadHostEntry(t, writeHost(t, t.TempDir(), hostTable[1], `{"command": "node", "args": ["$TOOL_DIR"]}`), ClaudeCode,
		Options{Lookup: env(map[string]string{"TOOL_DIR": "/t"})})
	if !slices.Equal(e.Args, []string{"$TOOL_DIR"}) {
		t.Errorf("%+v", e)
	}
}

func TestProjectDir(t *testing.T) {
	for p, want := range map[string]string{
		"/r/.vscode/mcp.json":        "/r",
		"/r/.gemini/settings.json":   "/r",
		"/r/.kiro/settings/mcp.json": "/r",
		"/r/.mcp.json":               "/r",
		"/home/u/.claude.json":       "/w",
	} {
		if got := ProjectDir(filepath.FromSlash(p), filepath.FromSlash("/w")); got != filepath.FromSlash(want) {
			t.Errorf("%s: %s, want %s", p, got, want)
		}
	}
}

// FuzzHostReading: whatever an entry holds, on any host, check and wrap
// agree: an entry ambiguous for its host is never wrapped, one its host
// does not start is never wrapped nor read for starting, and one wrap
// rewrites reads back as running etdi run.
func FuzzHostReading(f *testing.F) {
	for _, e := range []string{
		`{"command": "node", "args": ["s.js"]}`,
		`{"command": "node", "url": "http://127.0.0.1:1/mcp"}`,
		`{"command": "node", "httpUrl": "http://127.0.0.1:1/h", "url": "http://127.0.0.1:1/u"}`,
		`{"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"A": "b"}}`,
		`{"type": "sse", "command": "x"}`,
		`{"command": "x", "disabled": true}`,
		`{"command": "x", "enabled": false, "type": "stdio"}`,
		`{"serverUrl": "http://127.0.0.1:1/mcp", "disabled": false}`,
		`{"command": {"path": "x", "args": ["a"]}, "url": "http://h/"}`,
	} {
		for i := range hostTable {
			f.Add(uint8(i), e)
		}
	}
	f.Fuzz(func(t *testing.T, hi uint8, entry string) {
		h := hostTable[int(hi)%len(hostTable)]
		p := filepath.Join("/cfg", h.path)
		data := []byte(`{"` + h.list + `": {"s": ` + entry + `}}`)
		es, err := loadData(p, data, h.host, Options{})
		if err != nil || len(es) != 1 {
			return
		}
		e := es[0]
		if e.Ambiguous != "" && (e.Transport != "" || e.NotStarted()) {
			t.Fatalf("ambiguous yet read for starting: %+v", e)
		}
		if e.NotStarted() && (e.Command != "" || e.URL != "" || e.Transport != "") {
			t.Fatalf("not started yet read for starting: %+v", e)
		}
		res, err := Wrap(p, data, WrapOptions{Host: h.host, Etdi: testEtdi})
		if err != nil || len(res.Outcomes) != 1 {
			return
		}
		switch st := res.Outcomes[0].Status; {
		case e.Ambiguous != "" && st != StatusRefused:
			t.Fatalf("wrap %s an ambiguous entry: %+v", st, e)
		case e.NotStarted() && st != StatusDisabled:
			t.Fatalf("wrap %s an entry its host does not start: %+v", st, e)
		case st == StatusDisabled && !e.NotStarted():
			t.Fatalf("wrap left alone an entry its host may start: %+v", e)
		case st == StatusWrapped:
			after, err := loadData(p, res.Data, h.host, Options{Gate: testGate()})
			if err != nil || len(after) != 1 || !after[0].Wrapped || after[0].Ambiguous != "" {
				t.Fatalf("wrapped entry reads back as %+v %v", after, err)
			}
		}
	})
}

// What the JSON form shows of a resolved or unresolved program is
// redacted as the entry's env values are: a PATH may hold a secret.
func TestProgramRedacted(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("executable bits")
	}
	root := t.TempDir()
	secretDir := filepath.Join(root, "tok-81fe3a9c")
	exe(t, filepath.Join(secretDir, "srv"))
	exe(t, filepath.Join(root, "repo", "rel-77c1d0", "srv"))
	cc := hostTable[1]
	for _, entry := range []string{
		`{"command": "srv", "env": {"PATH": "` + secretDir + `"}}`,
		`{"command": "srv", "env": {"PATH": "rel-77c1d0:/usr/bin"}}`,
	} {
		e := loadHostEntry(t, writeHost(t, root, cc, entry), ClaudeCode, Options{Cwd: filepath.Join(root, "repo"), Lookup: env(map[string]string{"PATH": "/usr/bin"})})
		if e.Program == "" && e.Unresolved == "" {
			t.Fatalf("%s: %+v", entry, e)
		}
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), "tok-81fe3a9c") || strings.Contains(string(b), "rel-77c1d0") {
			t.Errorf("the entry's PATH shows in %s", b)
		}
	}
	// An unresolved program named with an env value.
	e := loadHostEntry(t, writeHost(t, root, hostTable[2], `{"command": "zz-secret-901/srv", "env": {"K": "zz-secret-901"}}`), Cursor, Options{Lookup: env(map[string]string{"PATH": "/usr/bin"})})
	if b, _ := json.Marshal(e); e.Unresolved == "" || strings.Contains(string(b), "zz-secret-901") {
		t.Errorf("%+v shows as %s", e, b)
	}
}

// A header value is a secret even when nothing else holds it.
func TestHeaderValueSecret(t *testing.T) {
	e := loadHostEntry(t, writeHost(t, t.TempDir(), hostTable[2], `{"url": "https://h.example/mcp", "headers": {"X-Key": "hdr-only-5521"}}`), Cursor, Options{})
	b, _ := json.Marshal(e)
	var s redact.Set
	e.AddSecrets(&s)
	if s.String("k hdr-only-5521") == "k hdr-only-5521" || strings.Contains(string(b), "hdr-only-5521") {
		t.Errorf("header value shown: %s", b)
	}
}

// A variable etdi cannot resolve is a problem, never guessed.
func TestUnresolvableVariable(t *testing.T) {
	e := loadHostEntry(t, writeHost(t, t.TempDir(), hostTable[3], `{"command": "x", "args": ["${command:pick}"]}`), VSCode, Options{})
	if len(e.Problems) != 1 || !strings.Contains(e.Problems[0], "cannot resolve") {
		t.Errorf("%+v", e)
	}
}

// A launch approval is bound to the entry's text: any change to it is
// another launch.
func TestLaunchDigestBindsEntry(t *testing.T) {
	root := t.TempDir()
	a := loadHostEntry(t, writeHost(t, root, hostTable[1], `{"command": "x", "args": ["a"]}`), ClaudeCode, Options{})
	b := loadHostEntry(t, writeHost(t, root, hostTable[1], `{"command": "x", "args": ["b"]}`), ClaudeCode, Options{})
	if a.Launch == "" || a.Launch == b.Launch {
		t.Errorf("%s %s", a.Launch, b.Launch)
	}
}

// Codex: an unset bearer token variable is a problem; a non-string
// argument is refused.
func TestCodexBearerAndArgs(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.toml")
	os.WriteFile(p, []byte("[mcp_servers.r]\nurl = \"https://r.example/mcp\"\nbearer_token_env_var = \"UNSET_TOKEN_X\"\n"), 0o644)
	if e := loadHostEntry(t, p, Codex, Options{Lookup: env(nil)}); len(e.Problems) != 1 || !strings.Contains(e.Problems[0], "UNSET_TOKEN_X") {
		t.Errorf("%+v", e)
	}
	os.WriteFile(p, []byte("[mcp_servers.r]\ncommand = \"x\"\nargs = [\"a\", 5]\n"), 0o644)
	if _, err := Load(p, Codex, Options{}); err == nil {
		t.Error("a non-string argument was taken")
	}
}

// A type that is not a string is refused, not read as absent.
func TestTypeNotString(t *testing.T) {
	p := writeHost(t, t.TempDir(), hostTable[1], `{"type": 5, "command": "x"}`)
	if _, err := Load(p, ClaudeCode, Options{}); err == nil {
		t.Error("a numeric type was taken")
	}
}

// A configuration file is bounded, also one whose size is not known in
// advance.
func TestConfigBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".mcp.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(MaxConfigSize + 1)
	f.Close()
	if _, err := Load(p, ClaudeCode, Options{}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("%v", err)
	}
	if runtime.GOOS != "windows" {
		if _, err := os.Stat("/dev/zero"); err == nil {
			if _, err := Load("/dev/zero", ClaudeCode, Options{}); err == nil || !strings.Contains(err.Error(), "larger than") {
				t.Errorf("/dev/zero: %v", err)
			}
		}
	}
}

// An entry that sets PATH under two names the host takes for one (PATH
// and Path on Windows) with different values: which one the host uses
// is not established, so its program is not either.
func TestEnvPathTwice(t *testing.T) {
	vars := map[string]string{"PATH": "/nope", "Path": "/home/u/bin", "path": "/nope"}
	if p, set, twice := envPath([]string{"PATH", "Path"}, vars, true); !set || twice == "" {
		t.Errorf("windows PATH and Path: %q %v %q", p, set, twice)
	}
	if p, set, twice := envPath([]string{"PATH", "path"}, vars, true); !set || twice != "" || p != "/nope" {
		t.Errorf("the same value twice: %q %v %q", p, set, twice)
	}
	// Elsewhere Path is another variable.
	if p, set, twice := envPath([]string{"PATH", "Path"}, vars, false); !set || twice != "" || p != "/nope" {
		t.Errorf("linux PATH and Path: %q %v %q", p, set, twice)
	}
	if _, set, _ := envPath([]string{"Path"}, vars, false); set {
		t.Error("linux Path alone set PATH")
	}
	if runtime.GOOS == "windows" {
		root := t.TempDir()
		p := writeHost(t, root, hostTable[1], `{"command": "srv", "env": {"PATH": "C:\\nope", "Path": "C:\\other"}}`)
		if e := loadHostEntry(t, p, ClaudeCode, Options{Cwd: filepath.Join(root, "repo"), Lookup: env(map[string]string{"PATH": `C:\Windows`})}); e.Unresolved == "" || e.Program != "" {
			t.Errorf("%+v", e)
		}
	}
}
