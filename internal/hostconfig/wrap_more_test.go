package hostconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Header values are moved into the entry's env, never into arguments
// (process listings show arguments): every header value of the original
// is in env after wrapping and in no argument.
func TestWrapHeaderValuesNeverInArgs(t *testing.T) {
	data := []byte(`{"mcpServers": {"r": {"type": "http", "url": "https://r.example/mcp", "headers": {"Authorization": "Bearer literal-token-6621", "X-Key": "${env:KEY}"}}}}`)
	res, err := Wrap("/cfg/.claude.json", data, WrapOptions{Host: ClaudeCode, Etdi: testEtdi})
	if err != nil {
		t.Fatal(err)
	}
	root, err := ParseJSONC(res.Data)
	if err != nil {
		t.Fatal(err)
	}
	e := root.Get("mcpServers").Get("r")
	for _, a := range e.Get("args").Elems {
		if strings.Contains(a.Str, "literal-token-6621") || strings.Contains(a.Str, "${env:KEY}") {
			t.Fatalf("header value in argument %q", a.Str)
		}
	}
	env := e.Get("env")
	if env.Get("ETDI_HEADER_1").Str != "Bearer literal-token-6621" || env.Get("ETDI_HEADER_2").Str != "${env:KEY}" {
		t.Fatalf("env: %s", text(res.Data, env))
	}
	es, err := loadData("/cfg/.claude.json", res.Data, ClaudeCode, Options{Lookup: env0(map[string]string{"KEY": "k"}), Gate: testGate()})
	if err != nil {
		t.Fatal(err)
	}
	if h := es[0].Headers; h["Authorization"] != "Bearer literal-token-6621" || h["X-Key"] != "k" || len(es[0].EnvKeys) != 0 || !es[0].Wrapped || es[0].URL != "https://r.example/mcp" {
		t.Fatalf("seen through as %+v", es[0])
	}
}

func env0(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// Entries that cannot be rewritten faithfully are refused, with the
// reason, and left byte for byte as they were.
func TestWrapRefusals(t *testing.T) {
	for _, c := range []struct {
		name, host, path, data, reason string
	}{
		{"sse type", VSCode, "/c/.vscode/mcp.json", `{"servers": {"x": {"type": "sse", "url": "https://x/sse"}}}`, `type "sse"`},
		{"headers and env", Cursor, "/c/.cursor/mcp.json", `{"mcpServers": {"x": {"url": "https://x/mcp", "headers": {"A": "b"}, "env": {"C": "d"}}}}`, "both headers and env"},
		{"placeholder name", Cursor, "/c/.cursor/mcp.json", `{"mcpServers": {"${HOME}": {"command": "node"}}}`, "placeholder"},
		{"bad header name", Cursor, "/c/.cursor/mcp.json", `{"mcpServers": {"x": {"url": "https://x/mcp", "headers": {"A=B": "v"}}}}`, "not a valid HTTP header name"},
		{"two urls", Windsurf, "/c/mcp_config.json", `{"mcpServers": {"x": {"url": "https://x/mcp", "serverUrl": "https://y/mcp"}}}`, "both url and serverUrl"},
		{"codex inline table", Codex, "/c/config.toml", "mcp_servers = { x = { command = \"node\" } }\n", "not written as one [mcp_servers.x] table"},
		{"codex dotted key", Codex, "/c/config.toml", "[mcp_servers.x]\nargs.0 = 1\ncommand = \"node\"\n", ""},
		{"codex multi-line string", Codex, "/c/config.toml", "[mcp_servers.x]\ncommand = \"\"\"node\"\"\"\n", "multi-line string"},
		{"codex quoted key", Codex, "/c/config.toml", "[mcp_servers.x]\n\"command\" = \"node\"\n", "not written as `command = ...`"},
		{"codex number in args", Codex, "/c/config.toml", "[mcp_servers.x]\ncommand = \"node\"\nargs = [\"a\", 1]\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Wrap(c.path, []byte(c.data), WrapOptions{Host: c.host, Etdi: testEtdi})
			if err != nil {
				if c.reason == "" {
					return // refused as a whole: the file does not read
				}
				t.Fatal(err)
			}
			if !bytes.Equal(res.Data, []byte(c.data)) || len(res.Records) != 0 {
				t.Fatalf("changed a refused entry:\n%s", res.Data)
			}
			if len(res.Outcomes) != 1 || res.Outcomes[0].Status != StatusRefused || !strings.Contains(res.Outcomes[0].Reason, c.reason) {
				t.Fatalf("outcomes %+v, want refused with %q", res.Outcomes, c.reason)
			}
		})
	}
}

// Wrap refuses to write an etdi path a host would expand, that would
// break the file, or that is no program at all.
func TestWrapRefusesOddEtdiPath(t *testing.T) {
	for _, p := range []string{"", "/opt/${HOME}/etdi", "/opt/et\ndi"} {
		if _, err := Wrap("/c/mcp.json", []byte(`{"mcpServers": {}}`), WrapOptions{Host: Cursor, Etdi: p}); err == nil {
			t.Errorf("accepted etdi path %q", p)
		}
	}
	// A program of another name: a person reading the file would not
	// recognize it.
	_, err := Wrap("/c/mcp.json", []byte(`{"mcpServers": {"a": {"command": "node"}}}`), WrapOptions{Host: Cursor, Etdi: "/tmp/walk-etdi"})
	if err == nil || !strings.Contains(err.Error(), "not named etdi") {
		t.Errorf("a program not named etdi: %v", err)
	}
	// A path where there is no etdi: its entries could not be proven.
	folder := filepath.Join(t.TempDir(), "etdi")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/nonexistent/bin/etdi", `C:\Tools\ETDI.EXE`, folder} {
		_, err := Wrap("/c/mcp.json", []byte(`{"mcpServers": {"a": {"command": "node"}}}`), WrapOptions{Host: Cursor, Etdi: p})
		if err == nil || !strings.Contains(err.Error(), "not a file the host can start") {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := Wrap("/c/mcp.json", []byte(`{"mcpServers": {"a": {"command": "node"}}}`), WrapOptions{Host: Cursor, Etdi: testEtdi}); err != nil {
		t.Errorf("%s: %v", testEtdi, err)
	}
}

// Unwrap restores an entry exactly from its record while it is as wrap
// wrote it, and by its structure once it changed: the user's change to
// the server's arguments is kept.
func TestUnwrapOnlyWhatWrapWrote(t *testing.T) {
	data := []byte(`{"mcpServers": {"a": {"command": "node", "args": ["a.js"]}, "b": {"command": "uvx"}}}`)
	res, err := Wrap("/c/mcp.json", data, WrapOptions{Host: Cursor, Etdi: testEtdi})
	if err != nil {
		t.Fatal(err)
	}
	// The user changed a's wrapped arguments since.
	changed := bytes.Replace(res.Data, []byte(`"a.js"]`), []byte(`"b.js"]`), 1)
	un, err := Unwrap("/c/mcp.json", changed, UnwrapOptions{Host: Cursor, Records: res.Records, Gate: testGate()})
	if err != nil {
		t.Fatal(err)
	}
	st := statuses(un)
	if st["a"] != StatusUnwrapped || st["b"] != StatusUnwrapped || len(un.Records) != 0 {
		t.Fatalf("outcomes %+v, records %d", un.Outcomes, len(un.Records))
	}
	if want := `{"mcpServers": {"a": {"command": "node", "args": ["b.js"]}, "b": {"command": "uvx"}}}`; string(un.Data) != want {
		t.Fatalf("unwrap result:\n%s\nwant\n%s", un.Data, want)
	}
	// Without records: by structure alone.
	un, err = Unwrap("/c/mcp.json", res.Data, UnwrapOptions{Host: Cursor, Gate: testGate()})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"mcpServers": {"a": {"command": "node", "args": ["a.js"]}, "b": {"command": "uvx", "args": []}}}`; string(un.Data) != want || un.Count(StatusUnwrapped) != 2 {
		t.Fatalf("without records: %+v\n%s", un.Outcomes, un.Data)
	}
	// Already restored by hand: nothing to do, the record is used up.
	un, err = Unwrap("/c/mcp.json", data, UnwrapOptions{Host: Cursor, Records: res.Records, Gate: testGate()})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(un.Data, data) || un.Count(StatusNotWrapped) != 2 || len(un.Records) != 0 {
		t.Fatalf("on the original: %+v", un.Outcomes)
	}
}

// Load sees through the user's etdi run: the server behind it, under
// the entry's name; arguments etdi does not understand are a problem,
// never guessed.
func TestLookThrough(t *testing.T) {
	bin := filepath.Dir(testEtdi)
	data := []byte(`{"mcpServers": {
  "s": {"command": ` + jsonString(testEtdi) + `, "args": ["run", "--name", "s", "--audit-calls", "--bundle", "b.etdi.json", "--timeout=30s", "--", "node", "s.js", "--x"]},
  "h": {"command": ` + jsonString(testEtdi) + `, "args": ["run", "--name", "h", "--url", "https://h/mcp", "--header-env", "Authorization=ETDI_HEADER_1", "--header-env", "X-Other=OTHER"], "env": {"ETDI_HEADER_1": "Bearer tok", "KEEP": "1"}},
  "odd": {"command": "etdi", "args": ["run", "--frobnicate", "--", "node"]},
  "empty": {"command": "etdi", "args": ["run", "--name", "empty", "--"]},
  "notrun": {"command": "etdi", "args": ["check", "--server", "--", "node"]}
}}`)
	es, err := loadData("/c/mcp.json", data, Cursor, Options{Lookup: env0(map[string]string{"OTHER": "o", "PATH": bin + string(os.PathListSeparator) + os.Getenv("PATH")}), Gate: testGate()})
	if err != nil {
		t.Fatal(err)
	}
	m := byName(es)
	if s := m["s"]; !s.Wrapped || s.Command != "node" || !slices.Equal(s.Args, []string{"s.js", "--x"}) || s.Transport != "stdio" || len(s.Problems) != 0 || s.Bundle != "b.etdi.json" || s.Imitation != "" || s.GateOverrides != nil {
		t.Errorf("s: %+v", s)
	}
	if h := m["h"]; !h.Wrapped || h.URL != "https://h/mcp" || h.Command != "" || h.Headers["Authorization"] != "Bearer tok" || h.Headers["X-Other"] != "o" ||
		!slices.Equal(h.EnvKeys, []string{"KEEP"}) || h.Transport != "http" {
		t.Errorf("h: %+v", h)
	}
	for _, n := range []string{"odd", "empty"} {
		if e := m[n]; !e.Wrapped || e.Command != "" || len(e.Problems) == 0 || !strings.Contains(e.Problems[0], "runs etdi run") {
			t.Errorf("%s: %+v", n, e)
		}
	}
	if e := m["notrun"]; e.Wrapped || e.Command != "etdi" || e.Imitation != "" {
		t.Errorf("notrun: %+v", e)
	}
}

// sameServers is Wrap's last guard: an entry that would start something
// else, or not run etdi run, stops the whole rewrite.
func TestSameServers(t *testing.T) {
	a := []Entry{{Name: "x", Command: "node", Args: []string{"a"}, Transport: "stdio"}}
	b := []Entry{{Name: "x", Command: "node", Args: []string{"a"}, Transport: "stdio", Wrapped: true}}
	if err := sameServers(a, b, map[string]bool{"x": true}); err != nil {
		t.Fatal(err)
	}
	if err := sameServers(a, a, map[string]bool{"x": true}); err == nil {
		t.Error("accepted an entry that does not run etdi run")
	}
	c := []Entry{{Name: "x", Command: "node", Args: []string{"b"}, Transport: "stdio", Wrapped: true}}
	if err := sameServers(a, c, map[string]bool{"x": true}); err == nil {
		t.Error("accepted changed arguments")
	}
}

// Wrapping an entry with a bundle: an entry wrapped earlier without that
// bundle is refused (leaving it would claim a check it does not make),
// one wrapped with the same bundle is already wrapped, JSON and Codex
// alike.
func TestWrapBundleOnWrappedEntry(t *testing.T) {
	data := []byte(`{"mcpServers": {"a": {"command": "node", "args": ["a.js"]}}}`)
	plain, err := Wrap("/c/mcp.json", data, WrapOptions{Host: Cursor, Etdi: testEtdi})
	if err != nil {
		t.Fatal(err)
	}
	withB, err := Wrap("/c/mcp.json", data, WrapOptions{Host: Cursor, Etdi: testEtdi, Name: "a", Bundle: "/b/a.etdi.json"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		data   []byte
		bundle string
		want   string
	}{
		{"plain, bundle asked", plain.Data, "/b/a.etdi.json", StatusRefused},
		{"same bundle", withB.Data, "/b/a.etdi.json", StatusAlreadyWrapped},
		{"other bundle", withB.Data, "/b/other.etdi.json", StatusRefused},
		{"no bundle asked", withB.Data, "", StatusAlreadyWrapped},
	} {
		res, err := Wrap("/c/mcp.json", c.data, WrapOptions{Host: Cursor, Etdi: testEtdi, Name: "a", Bundle: c.bundle})
		if err != nil {
			t.Fatal(err)
		}
		if st := statuses(res)["a"]; st != c.want || !bytes.Equal(res.Data, c.data) {
			t.Errorf("%s: status %q (want %q), changed %v", c.name, st, c.want, !bytes.Equal(res.Data, c.data))
		}
		if c.want == StatusRefused && !strings.Contains(res.Outcomes[0].Reason, "unwrap") {
			t.Errorf("%s: reason %q does not say to unwrap first", c.name, res.Outcomes[0].Reason)
		}
	}
	toml := []byte("[mcp_servers.a]\ncommand = \"node\"\n")
	cw, err := Wrap("/c/config.toml", toml, WrapOptions{Host: Codex, Etdi: testEtdi})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Wrap("/c/config.toml", cw.Data, WrapOptions{Host: Codex, Etdi: testEtdi, Name: "a", Bundle: "/b/a.etdi.json"})
	if err != nil {
		t.Fatal(err)
	}
	if st := statuses(res)["a"]; st != StatusRefused || !bytes.Equal(res.Data, cw.Data) {
		t.Errorf("codex: status %q", st)
	}
}
