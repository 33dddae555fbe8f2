package hostconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// An entry whose etdi run arguments etdi cannot read (one etdi run
// accepts but etdi does not model, such as --audit-calls=1 or --listen)
// is not already wrapped: the arguments it cannot read may sit beside a
// trust policy of the repository's, which etdi then never compares.
func TestWrapUnreadableRunIsNotAlreadyWrapped(t *testing.T) {
	dir := repo(t)
	cfg := filepath.Join(dir, ".mcp.json")
	for _, args := range []string{
		`"run", "--trust", "trust.json", "--audit-calls=1", "--", "node"`,
		`"run", "--listen", "127.0.0.1:0", "--trust", "trust.json", "--", "node"`,
		`"run", "--etcd-snapshots", "snaps", "--", "node"`,
	} {
		data := entryJSON(testEtdi, args, "")
		e := loadOne(t, cfg, data, Options{Gate: testGate(), Cwd: dir})
		if len(e.Problems) == 0 {
			t.Fatalf("%s: no problem: %+v", args, e)
		}
		res, err := Wrap(cfg, []byte(data), WrapOptions{Host: ClaudeCode, Etdi: testEtdi, Gate: Gate{Trust: "/u/trust.json"}, Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Outcomes) != 1 || res.Outcomes[0].Status != StatusRefused || !strings.Contains(res.Outcomes[0].Reason, "not one etdi understands") {
			t.Fatalf("%s: outcomes %+v", args, res.Outcomes)
		}
		if !bytes.Equal(res.Data, []byte(data)) {
			t.Fatalf("changed:\n%s", res.Data)
		}
	}
}

// Placeholders: hosts expand different ones (Claude Desktop and Codex
// none, Gemini CLI leaves one it cannot resolve as written, VS Code and
// Cursor their own names), so a program, a PATH folder or a gate file
// that is the user's only once etdi expands a placeholder proves
// nothing: the host may start the repository's file of that literal
// name. A placeholder after -- (the server's own arguments) is harmless.
func TestPlaceholdersProveNothing(t *testing.T) {
	dir := repo(t)
	cfg := filepath.Join(dir, ".mcp.json")
	home := filepath.Dir(filepath.Dir(testEtdi)) // testEtdi is $HOME/bin/etdi
	user := t.TempDir()
	trust := filepath.Join(user, "trust.json")
	if err := os.WriteFile(trust, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	lookup := env0(map[string]string{"HOME": home, "UD": user, "PATH": os.Getenv("PATH")})
	g := Gate{Etdi: []string{testEtdi}, Trust: trust}
	for _, c := range []struct {
		name, command, args, extra string
		wrapped                    bool
		override                   string
	}{
		{"program", "${HOME}/bin/etdi", `"run", "--", "node"`, "", false, ""},
		{"program, VS Code form", "${env:HOME}/bin/etdi", `"run", "--", "node"`, "", false, ""},
		{"PATH folder", "etdi", `"run", "--", "node"`, `, "env": {"PATH": "${HOME}/bin"}`, false, ""},
		{"trust flag", testEtdi, `"run", "--trust", "${UD}/trust.json", "--", "node"`, "", true, "${UD}/trust.json"},
		{"trust flag with =", testEtdi, `"run", "--trust=${env:UD}/trust.json", "--", "node"`, "", true, "${env:UD}/trust.json"},
		{"trust in env", testEtdi, `"run", "--", "node"`, `, "env": {"ETDI_TRUST": "${UD}/trust.json"}`, true, "${UD}/trust.json"},
		{"harmless: the user's trust as written", testEtdi, `"run", "--trust", ` + jsonString(trust) + `, "--", "node"`, "", true, ""},
		{"harmless: placeholder after --", testEtdi, `"run", "--", "node", "${HOME}/server.js"`, "", true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := loadOne(t, cfg, entryJSON(c.command, c.args, c.extra), Options{Lookup: lookup, Gate: g, Cwd: dir})
			if e.Wrapped != c.wrapped {
				t.Fatalf("wrapped %v, want %v: %+v", e.Wrapped, c.wrapped, e)
			}
			if !c.wrapped {
				if !strings.Contains(e.Imitation, "placeholder") {
					t.Fatalf("imitation %q, want one that names the placeholder", e.Imitation)
				}
				return
			}
			if c.override == "" {
				if len(e.GateOverrides) != 0 || len(e.Problems) != 0 {
					t.Fatalf("flagged: %+v", e)
				}
				if c.name == "harmless: placeholder after --" && (e.Command != "node" || e.Args[0] != filepath.Join(home, "server.js")) {
					t.Fatalf("server not expanded: %+v", e)
				}
				return
			}
			if len(e.GateOverrides) != 1 || e.GateOverrides[0].Entry != c.override {
				t.Fatalf("overrides %+v, want one of %q", e.GateOverrides, c.override)
			}
		})
	}
}

// Windows: Node's hosts (libuv) look a bare program name up in the
// folder they start it in before PATH, and try name.com before
// name.exe. An etdi, etdi.exe or etdi.com of the repository's in that folder
// is what the host starts, whatever is on PATH.
func TestWindowsBareNameFromTheWorkingFolder(t *testing.T) {
	defer func(g string) { goos = g }(goos)
	goos = "windows"
	dir := t.TempDir()
	cfg := filepath.Join(dir, ".mcp.json")
	bin := t.TempDir()
	user := filepath.Join(bin, "etdi.exe")
	if err := os.Link(testEtdi, user); err != nil {
		t.Fatal(err)
	}
	g := Gate{Etdi: []string{testEtdi}}
	path := env0(map[string]string{"PATH": bin})
	data := entryJSON("etdi", `"run", "--", "node"`, "")
	if e := loadOne(t, cfg, data, Options{Lookup: path, Gate: g, Cwd: dir}); !e.Wrapped {
		t.Fatalf("the user's etdi.exe on PATH: %+v", e)
	}
	for _, name := range []string{"etdi.exe", "etdi.com", "etdi"} {
		evil := filepath.Join(dir, name)
		if err := os.WriteFile(evil, []byte("MZ"), 0o755); err != nil {
			t.Fatal(err)
		}
		e := loadOne(t, cfg, data, Options{Lookup: path, Gate: g, Cwd: dir})
		if e.Wrapped || !strings.Contains(e.Imitation, evil) {
			t.Fatalf("%s in the working folder: %+v", name, e)
		}
		os.Remove(evil)
	}
	// In a PATH folder, a .com beside the user's .exe is started first.
	if err := os.WriteFile(filepath.Join(bin, "etdi.com"), []byte("MZ"), 0o755); err != nil {
		t.Fatal(err)
	}
	if e := loadOne(t, cfg, data, Options{Lookup: path, Gate: g, Cwd: dir}); e.Wrapped {
		t.Fatalf("etdi.com beside etdi.exe on PATH: %+v", e)
	}
}

// An etcd store's snapshots are in the user cache folder unless
// ETDI_ETCD_SNAPSHOTS says otherwise: an entry's env that moves that
// folder hands the gate a snapshot of the repository's while etcd
// cannot be reached.
func TestGateOverrideCacheFolder(t *testing.T) {
	dir := repo(t)
	cfg := filepath.Join(dir, ".mcp.json")
	defer func(g string) { goos = g }(goos)
	goos = "linux"
	store := "etcd://127.0.0.1:2379/etdi"
	g := Gate{Etdi: []string{testEtdi}, Pins: store}
	lookup := env0(map[string]string{"PATH": "/usr/bin"})
	args := `"run", "--pins", "` + store + `", "--", "node"`
	e := loadOne(t, cfg, entryJSON(testEtdi, args, `, "env": {"XDG_CACHE_HOME": "cache"}`), Options{Lookup: lookup, Gate: g, Cwd: dir})
	if len(e.GateOverrides) != 1 || e.GateOverrides[0].Via != "env XDG_CACHE_HOME" {
		t.Fatalf("overrides %+v", e.GateOverrides)
	}
	// A file store has no snapshots: the cache folder does not matter.
	g.Pins = "/u/pins.db"
	args = `"run", "--pins", "/u/pins.db", "--", "node"`
	e = loadOne(t, cfg, entryJSON(testEtdi, args, `, "env": {"XDG_CACHE_HOME": "cache"}`), Options{Lookup: lookup, Gate: g, Cwd: dir})
	if len(e.GateOverrides) != 0 {
		t.Fatalf("file store: %+v", e.GateOverrides)
	}
}

// A wrapped entry whose server was changed after wrap (its arguments
// after --, or its URL) is restored as it runs now, and Unwrap says that
// it is not the server that was wrapped; one whose text alone the host
// rewrote is restored without a word.
func TestUnwrapSaysTheServerChanged(t *testing.T) {
	orig := []byte(`{"mcpServers": {"a": {"command": "node", "args": ["a.js"]}, "r": {"url": "https://r.example/mcp"}}}`)
	res, err := Wrap("/c/.mcp.json", orig, WrapOptions{Host: ClaudeCode, Etdi: testEtdi})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Records {
		if r.Server == "" {
			t.Fatalf("record without the server: %+v", r)
		}
	}
	for _, c := range []struct {
		name, from, to string
		changed        []string
	}{
		{"layout only", `"args": ["run"`, "\"args\": [\n    \"run\"", nil},
		{"the command after --", `"--", "node", "a.js"`, `"--", "node", "evil.js"`, []string{"a"}},
		{"the URL", `"https://r.example/mcp"`, `"https://evil.example/mcp"`, []string{"r"}},
		{"the env", `"args": ["run", "--name", "a"`, `"env": {"NODE_OPTIONS": "--require=./evil.js"}, "args": ["run", "--name", "a"`, []string{"a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			edited := strings.Replace(string(res.Data), c.from, c.to, 1)
			if edited == string(res.Data) {
				t.Fatalf("%q not in\n%s", c.from, res.Data)
			}
			un, err := Unwrap("/c/.mcp.json", []byte(edited), UnwrapOptions{Host: ClaudeCode, Records: res.Records, Gate: testGate()})
			if err != nil {
				t.Fatal(err)
			}
			if un.Count(StatusUnwrapped) != 2 {
				t.Fatalf("outcomes %+v", un.Outcomes)
			}
			var told []string
			for _, o := range un.Outcomes {
				if o.Reason != "" {
					if !strings.Contains(o.Reason, "changed since etdi wrap") {
						t.Errorf("%s: %q", o.Name, o.Reason)
					}
					told = append(told, o.Name)
				}
			}
			if strings.Join(told, ",") != strings.Join(c.changed, ",") {
				t.Fatalf("told of %v, want %v", told, c.changed)
			}
		})
	}
}

// Windows: a program, a PATH folder or a gate file on another machine
// (\\host\share, //host/share) is never looked at: Windows would sign in
// to that machine with the user's credentials. (On Linux //tmp/x is
// /tmp/x: were it looked at, the user's etdi and trust policy would be
// found there.)
func TestWindowsNetworkPathsNotOpened(t *testing.T) {
	defer func(g string) { goos = g }(goos)
	goos = "windows"
	dir := t.TempDir()
	cfg := filepath.Join(dir, ".mcp.json")
	user := t.TempDir()
	trust := filepath.Join(user, "trust.json")
	if err := os.WriteFile(trust, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := Gate{Etdi: []string{testEtdi}, Trust: trust}
	path := env0(map[string]string{"PATH": "/nonexistent"})
	run := `"run", "--", "node"`
	for _, c := range []struct{ name, command, extra, why string }{
		{"program", "/" + testEtdi, "", "another machine"},
		{"program, backslashes", strings.ReplaceAll("/"+testEtdi, "/", `\`), "", "another machine"},
		{"entry PATH", "etdi", `, "env": {"PATH": ` + jsonString("/"+filepath.Dir(testEtdi)) + `}`, "network folder"},
	} {
		e := loadOne(t, cfg, entryJSON(c.command, run, c.extra), Options{Lookup: path, Gate: g, Cwd: dir})
		if e.Wrapped || !strings.Contains(e.Imitation, c.why) {
			t.Errorf("%s: %+v", c.name, e)
		}
	}
	e := loadOne(t, cfg, entryJSON(testEtdi, `"run", "--trust", `+jsonString("/"+trust)+`, "--", "node"`, ""), Options{Lookup: path, Gate: g, Cwd: dir})
	if !e.Wrapped || len(e.GateOverrides) != 1 {
		t.Errorf("trust policy on another machine: %+v", e)
	}
	// Whatever path reaches it, no file on another machine is looked at.
	if _, ok := fileInfo("/" + testEtdi); ok {
		t.Error("fileInfo looked at //host/share")
	}
}

// Windows: an env that sets a variable twice, spelt differently, with
// different values, proves nothing: hosts differ in which one they pass
// on (Node the first in sort order), and etdi must not pick the one that
// happens to be the user's.
func TestWindowsEnvSpelledTwice(t *testing.T) {
	defer func(g string) { goos = g }(goos)
	goos = "windows"
	dir := repo(t)
	cfg := filepath.Join(dir, ".mcp.json")
	user := t.TempDir()
	trust := filepath.Join(user, "trust.json")
	if err := os.WriteFile(trust, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := Gate{Etdi: []string{testEtdi}, Trust: trust}
	for i := 0; i < 20; i++ { // map order varies from run to run
		env := `, "env": {"Etdi_Trust": "trust.json", "etdi_trust": ` + jsonString(trust) + `}`
		e := loadOne(t, cfg, entryJSON(testEtdi, `"run", "--", "node"`, env), Options{Gate: g, Cwd: dir})
		if len(e.GateOverrides) != 1 || e.GateOverrides[0].Via != "env ETDI_TRUST" {
			t.Fatalf("overrides %+v", e.GateOverrides)
		}
		env = `, "env": {"Path": ` + jsonString(filepath.Join(dir, "tools")) + `, "PATH": ` + jsonString(filepath.Dir(testEtdi)) + `}`
		if e := loadOne(t, cfg, entryJSON("etdi", `"run", "--", "node"`, env), Options{Gate: g, Cwd: dir}); e.Wrapped {
			t.Fatalf("PATH twice: %+v", e)
		}
	}
	// The same value twice is that value.
	env := `, "env": {"ETDI_TRUST": ` + jsonString(trust) + `, "etdi_trust": ` + jsonString(trust) + `}`
	if e := loadOne(t, cfg, entryJSON(testEtdi, `"run", "--", "node"`, env), Options{Gate: g, Cwd: dir}); len(e.GateOverrides) != 0 {
		t.Fatalf("the same value twice: %+v", e.GateOverrides)
	}
}

// A wrapped entry that also has a URL member: Gemini CLI connects to
// httpUrl (or url) before it starts a command, and Claude Code and VS
// Code follow "type", so the host may reach that server with no gate.
// It is a problem, not wrapped as etdi's: wrap refuses to call it
// already wrapped, and unwrap refuses to take it apart (leaving the
// file as it is, its other entries restored).
func TestWrappedEntryWithURLBeside(t *testing.T) {
	dir := repo(t)
	cfg := filepath.Join(dir, ".gemini", "settings.json")
	for _, member := range []string{`"httpUrl": "https://evil.example/mcp"`, `"type": "http", "url": "https://evil.example/mcp"`} {
		entry := `"docs": {"command": ` + jsonString(testEtdi) + `, "args": ["run", "--", "node", "docs.js"], ` + member + `}`
		data := `{"mcpServers": {` + entry + `, "mine": {"command": ` + jsonString(testEtdi) + `, "args": ["run", "--", "node", "m.js"]}}}`
		es, err := loadData(cfg, []byte(data), Gemini, Options{Gate: testGate(), Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		// Gemini CLI reaches the URL: that is the server checked, and
		// the command beside it plays no part.
		if e := es[0]; e.Wrapped || e.URL != "https://evil.example/mcp" || e.Command != "" || !slices.Contains(e.Ignored, "command") {
			t.Fatalf("%s: %+v", member, e)
		}
		res, err := Wrap(cfg, []byte(data), WrapOptions{Host: Gemini, Etdi: testEtdi, Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcomes[0].Status != StatusRefused || res.Outcomes[1].Status != StatusAlreadyWrapped {
			t.Fatalf("wrap %s: %+v", member, res.Outcomes)
		}
		un, err := Unwrap(cfg, []byte(data), UnwrapOptions{Host: Gemini, Gate: testGate(), Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		// Gemini reads the entry as its URL server, not a wrapped one:
		// unwrap leaves it exactly as it is.
		if st := statuses(un); st["docs"] == StatusUnwrapped || st["mine"] != StatusUnwrapped || !strings.Contains(string(un.Data), entry) {
			t.Fatalf("unwrap %s: %+v\n%s", member, un.Outcomes, un.Data)
		}
	}
}
