package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hostHomeFiles puts every supported host's sample configuration where
// the host keeps it on Linux, under home.
var hostHomeFiles = map[string]string{
	"claude_desktop_config.json": ".config/Claude/claude_desktop_config.json",
	"dot.claude.json":            ".claude.json",
	"cursor-mcp.json":            ".cursor/mcp.json",
	"vscode-mcp.json":            ".config/Code/User/mcp.json",
	"vscode-settings.json":       ".config/Code/User/settings.json",
	"cline_mcp_settings.json":    ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
	"mcp_config.json":            ".codeium/windsurf/mcp_config.json",
	"gemini-settings.json":       ".gemini/settings.json",
	"zed-settings.json":          ".config/zed/settings.json",
	"kiro-mcp.json":              ".kiro/settings/mcp.json",
	"amazonq-mcp.json":           ".aws/amazonq/mcp.json",
	"config.toml":                ".codex/config.toml",
}

// wrapHome is a home directory whose default trust policy exists, as
// etdi wrap requires.
func wrapHome(t *testing.T) string {
	dir := t.TempDir()
	writeText(t, filepath.Join(dir, ".config", "etdi", "trust.json"), `{"version":1,"unsigned":"warn","providers":[]}`, 0o644)
	return dir
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeText(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// TestCLIWrapUnwrapEveryHost: etdi wrap --config auto rewrites the real
// configuration files of every supported host where the hosts keep them,
// keeps a 0600 backup and each file's mode, leaves project-scoped files
// alone, is idempotent, and etdi unwrap gives back every file byte for
// byte.
func TestCLIWrapUnwrapEveryHost(t *testing.T) {
	dir := wrapHome(t)
	originals := map[string]string{}
	for src, dst := range hostHomeFiles {
		data := readText(t, filepath.Join("../../internal/hostconfig/testdata/wrap", src))
		path := filepath.Join(dir, dst)
		writeText(t, path, data, 0o640)
		originals[path] = data
	}
	project := filepath.Join(dir, ".mcp.json")
	projectText := `{"mcpServers": {"repo-helper": {"command": "sh", "args": ["-c", "true"]}}}`
	writeText(t, project, projectText, 0o644)

	r := runEtdi(t, dir, nil, "wrap", "--config", "auto")
	// Gemini's SSE entry and Codex's entry with a bearer token variable
	// are refused: exit 1, and the summary counts them.
	if r.code != 1 || !strings.Contains(r.stdout, "12 file(s): 23 wrapped, 0 already wrapped, 2 refused, 1 disabled, 1 skipped") {
		t.Fatalf("wrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "leaving project-scoped files alone") || readText(t, project) != projectText {
		t.Fatalf("wrap touched a project-scoped file without --project:\n%s", r.stderr)
	}
	for path, orig := range originals {
		now := readText(t, path)
		if now == orig {
			t.Errorf("%s not rewritten", path)
		}
		if !strings.Contains(now, `"run", "--name", `) {
			t.Errorf("%s has no etdi run entry:\n%s", path, now)
		}
		fi, _ := os.Stat(path)
		if fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v, want 0640 kept", path, fi.Mode().Perm())
		}
		bi, err := os.Stat(path + ".etdi-backup")
		if err != nil || bi.Mode().Perm() != 0o600 || readText(t, path+".etdi-backup") != orig {
			t.Errorf("%s: no 0600 backup of the original (%v)", path, err)
		}
	}
	state := filepath.Join(dir, ".config", "etdi", "wrapped.json")
	if fi, err := os.Stat(state); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("wrap records: %v", err)
	}

	// Idempotent.
	wrapped := map[string]string{}
	for path := range originals {
		wrapped[path] = readText(t, path)
	}
	r = runEtdi(t, dir, nil, "wrap", "--config", "auto")
	if !strings.Contains(r.stdout, "0 wrapped, 23 already wrapped, 2 refused") {
		t.Fatalf("second wrap:\n%s%s", r.stdout, r.stderr)
	}
	for path := range originals {
		if readText(t, path) != wrapped[path] {
			t.Errorf("second wrap changed %s", path)
		}
	}

	r = runEtdi(t, dir, nil, "unwrap", "--config", "auto")
	if r.code != 0 || !strings.Contains(r.stdout, "23 unwrapped, 0 refused") {
		t.Fatalf("unwrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for path, orig := range originals {
		if readText(t, path) != orig {
			t.Errorf("unwrap did not restore %s byte for byte:\n%s", path, readText(t, path))
		}
	}
	var st wrapState
	json.Unmarshal([]byte(readText(t, state)), &st)
	if len(st.Files) != 0 {
		t.Errorf("records left after unwrap: %v", st.Files)
	}
	// Unwrapping again changes nothing.
	r = runEtdi(t, dir, nil, "unwrap", "--config", "auto")
	if r.code != 0 || !strings.Contains(r.stdout, "0 unwrapped, 0 refused") {
		t.Fatalf("second unwrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func cursorFile(t *testing.T, dir string) (string, string) {
	path := filepath.Join(dir, "mcp.json")
	text := "{\r\n  // servers\r\n  \"mcpServers\": {\r\n    \"a\": {\"command\": \"node\", \"args\": [\"a.js\"]},\r\n    \"b\": {\"url\": \"https://b.example/mcp\", \"headers\": {\"Authorization\": \"Bearer b-token-4471\"}}\r\n  }\r\n}\r\n"
	writeText(t, path, text, 0o600)
	return path, text
}

// --dry-run prints the change as a diff and writes nothing: no file, no
// backup, no records.
func TestCLIWrapDryRun(t *testing.T) {
	dir := t.TempDir()
	path, text := cursorFile(t, dir)
	other := filepath.Join(dir, "bin", "etdi")
	writeText(t, other, "#!/bin/sh\n", 0o755)
	r := runEtdi(t, dir, nil, "wrap", "--config", path, "--dry-run", "--etdi", other)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"--- " + path, "+++ " + path, "@@ -4,2 +4,2 @@",
		`-    "a": {"command": "node", "args": ["a.js"]},`,
		`+    "a": {"command": ` + jsonQuote(other) + `, "args": ["run", "--name", "a", "--", "node", "a.js"]},`,
		`+    "b": {"command": ` + jsonQuote(other) + `, "args": ["run", "--name", "b", "--url", "https://b.example/mcp", "--header-env", "Authorization=ETDI_HEADER_1"], "env": {"ETDI_HEADER_1": "Bearer b-token-4471"}}`,
		"2 to wrap, 0 already wrapped, 0 refused",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, r.stdout)
		}
	}
	if readText(t, path) != text {
		t.Error("--dry-run changed the file")
	}
	for _, p := range []string{path + ".etdi-backup", filepath.Join(dir, ".config", "etdi", "wrapped.json")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("--dry-run wrote %s", p)
		}
	}
}

// unwrap after the host rewrote the file: the entries are restored from
// what they say themselves (the server after --, the URL and the headers
// etdi run sends), and every other edit is kept: the new formatting, a
// server the host added, a member it changed. An entry edited since wrap
// keeps its edit; one the user restored by hand is left alone.
func TestCLIUnwrapAfterHostEdits(t *testing.T) {
	dir := wrapHome(t)
	path, text := cursorFile(t, dir)
	if r := runEtdi(t, dir, nil, "wrap", "--config", path); r.code != 0 {
		t.Fatalf("wrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The host reads the file, adds a server, changes a member of its
	// own, and writes it back in its own format (no comments, two
	// spaces, LF).
	var doc map[string]any
	if err := json.Unmarshal([]byte(hostconfigStrip(readText(t, path))), &doc); err != nil {
		t.Fatal(err)
	}
	doc["mcpServers"].(map[string]any)["added"] = map[string]any{"command": "uvx", "args": []any{"added-server"}}
	doc["theme"] = "dark"
	a := doc["mcpServers"].(map[string]any)["a"].(map[string]any)
	a["args"] = append(a["args"].([]any), "--verbose")
	out, _ := json.MarshalIndent(doc, "", "  ")
	writeText(t, path, string(out)+"\n", 0o600)

	r := runEtdi(t, dir, nil, "unwrap", "--config", path)
	if r.code != 0 || !strings.Contains(r.stdout, "2 unwrapped, 0 refused") {
		t.Fatalf("unwrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var got struct {
		Theme      string `json:"theme"`
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	final := readText(t, path)
	if err := json.Unmarshal([]byte(final), &got); err != nil {
		t.Fatalf("%v\n%s", err, final)
	}
	s := got.MCPServers
	if got.Theme != "dark" || len(s) != 3 || s["a"].Command != "node" || !slices.Equal(s["a"].Args, []string{"a.js", "--verbose"}) ||
		s["b"].Command != "" || s["b"].Args != nil || s["b"].URL != "https://b.example/mcp" || s["b"].Headers["Authorization"] != "Bearer b-token-4471" || s["b"].Env != nil ||
		s["added"].Command != "uvx" || !slices.Equal(s["added"].Args, []string{"added-server"}) {
		t.Fatalf("unwrap result:\n%s", final)
	}
	if !strings.HasPrefix(final, "{\n  \"") || strings.Contains(final, "\r") {
		t.Fatalf("unwrap did not keep the host's formatting:\n%s", final)
	}
	// Nothing left to unwrap; the records are used up.
	if r := runEtdi(t, dir, nil, "unwrap", "--config", path); r.code != 0 || readText(t, path) != final || !strings.Contains(r.stdout, "0 unwrapped, 0 refused") {
		t.Fatalf("second unwrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Untouched since wrap: the original bytes, comments and CRLF.
	path, text = cursorFile(t, dir)
	runEtdi(t, dir, nil, "wrap", "--config", path)
	if r := runEtdi(t, dir, nil, "unwrap", "--config", path); r.code != 0 || readText(t, path) != text {
		t.Fatalf("unwrap of an unchanged file: exit %d\n%s%s\n%s", r.code, r.stdout, r.stderr, readText(t, path))
	}

	// Never wrapped.
	other := filepath.Join(dir, "other", "mcp.json")
	writeText(t, other, text, 0o600)
	if r := runEtdi(t, dir, nil, "unwrap", "--config", other); r.code != 0 || readText(t, other) != text || !strings.Contains(r.stdout, "0 unwrapped, 0 refused") {
		t.Fatalf("unwrap of an untouched file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// hostconfigStrip drops the // comments of a wrapped cursorFile.
func hostconfigStrip(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "//") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The backup is of the file before etdi first changed it: a later wrap
// never overwrites it.
func TestCLIWrapKeepsFirstBackup(t *testing.T) {
	dir := wrapHome(t)
	path, _ := cursorFile(t, dir)
	writeText(t, path+".etdi-backup", "older backup", 0o600)
	if r := runEtdi(t, dir, nil, "wrap", "--config", path, "--name", "a"); r.code != 0 || !strings.Contains(r.stdout, "1 wrapped") {
		t.Fatalf("wrap --name: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if readText(t, path+".etdi-backup") != "older backup" {
		t.Fatal("backup overwritten")
	}
	if got := readText(t, path); !strings.Contains(got, `"b": {"url"`) {
		t.Fatalf("--name a rewrote b too:\n%s", got)
	}
	if r := runEtdi(t, dir, nil, "wrap", "--config", path, "--name", "nosuch"); r.code != 1 || !strings.Contains(r.stderr, `no server entry named "nosuch"`) {
		t.Fatalf("unknown --name: exit %d\n%s", r.code, r.stderr)
	}
	if r := runEtdi(t, dir, nil, "wrap"); r.code != 2 {
		t.Fatalf("wrap without --config: exit %d, want 2\n%s", r.code, r.stderr)
	}
	if r := runEtdi(t, dir, nil, "unwrap", "--config", path, "--etdi", "/x"); r.code != 2 || !strings.Contains(r.stderr, "--etdi /x is not a program file") {
		t.Fatalf("unwrap --etdi of no program: exit %d, want 2\n%s", r.code, r.stderr)
	}
}

// etdi check --config on a wrapped file checks the servers behind etdi
// run under the same names: tools approved before wrapping are still
// approved after, for a stdio and a Streamable HTTP server.
func TestCLICheckSeesThroughWrap(t *testing.T) {
	s := newSecretEnv(t)
	url := httpEcho(t)
	cfg := filepath.Join(s.dir, "mcp.json")
	writeText(t, cfg, `{"mcpServers": {
  "echo": {"command": "`+echoServer(t)+`", "args": ["--flag"]},
  "remote": {"url": "`+url+`/remote", "headers": {"Authorization": "Bearer wrapped-header-5512"}}
}}`, 0o600)
	if got := strings.Join(parseGateReport(t, s.check(0, "--config", cfg, "--yes", "--json")).wrapped(), " "); got != "false false" {
		t.Fatalf("entries not wrapped yet: wrapped %s", got)
	}
	if r := runEtdi(t, s.dir, []string{"ETDI_TRUST=" + filepath.Join(s.dir, "trust.json")}, "wrap", "--config", cfg); r.code != 0 || !strings.Contains(r.stdout, "2 wrapped") {
		t.Fatalf("wrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(readText(t, cfg), `"Bearer wrapped-header-5512"]`) {
		t.Fatal("a header value went into the arguments")
	}
	r := s.check(0, "--config", cfg, "--json")
	var out struct {
		Servers []struct {
			Target string `json:"target"`
			Tools  []struct {
				Name   string `json:"name"`
				Status string `json:"status"`
			} `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Servers) != 2 || !strings.HasPrefix(out.Servers[0].Target, "echo ") || !strings.HasPrefix(out.Servers[1].Target, "remote ") ||
		len(out.Servers[0].Tools) == 0 || len(out.Servers[1].Tools) == 0 {
		t.Fatalf("check of the wrapped file:\n%s", r.stdout)
	}
	if got := strings.Join(parseGateReport(t, r).wrapped(), " "); got != "true true" {
		t.Fatalf("the wrapped entries: wrapped %s\n%s", got, r.stdout)
	}
}

// unwrap --name of an entry wrap never rewrote says so (exit 1).
func TestCLIUnwrapUnknownName(t *testing.T) {
	dir := t.TempDir()
	path, text := cursorFile(t, dir)
	r := runEtdi(t, dir, nil, "unwrap", "--config", path, "--name", "a")
	if r.code != 1 || !strings.Contains(r.stderr, `no entry named "a" that etdi wrap rewrote`) || readText(t, path) != text {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// wrap refuses to write entries that etdi run could not start: without a
// trust policy every wrapped server would fail (a dry run warns); a
// bundle is one entry's, checked, and written by its absolute path, which
// check reads through the wrapped entry.
func TestCLIWrapPreflight(t *testing.T) {
	dir := t.TempDir()
	path, text := cursorFile(t, dir)
	r := runEtdi(t, dir, nil, "wrap", "--config", path)
	if r.code != 1 || !strings.Contains(r.stderr, "the wrapped servers could not start") || !strings.Contains(r.stderr, "etdi trust") || readText(t, path) != text {
		t.Fatalf("wrap without a trust policy: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runEtdi(t, dir, nil, "wrap", "--config", path, "--dry-run"); r.code != 0 || !strings.Contains(r.stderr, "warning: the wrapped servers could not start") {
		t.Fatalf("dry run without a trust policy: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	dir = wrapHome(t)
	path, text = cursorFile(t, dir)
	if r := runEtdi(t, dir, nil, "wrap", "--config", path, "--bundle", "b.etdi.json"); r.code != 2 || !strings.Contains(r.stderr, "--name") {
		t.Fatalf("--bundle without --name: exit %d\n%s", r.code, r.stderr)
	}
	writeText(t, filepath.Join(dir, "tools.json"), `{"tools":[{"name":"x"}]}`, 0o644)
	if r := runEtdi(t, dir, nil, "wrap", "--config", path, "--name", "a", "--bundle", "tools.json"); r.code == 0 || readText(t, path) != text {
		t.Fatalf("--bundle that is not a bundle: exit %d\n%s", r.code, r.stderr)
	}
	p := newPinEnv(t)
	p.ok("sign", "--key", "acme.key", "--out", "w.etdi.json", "v1.manifest.json")
	data, err := os.ReadFile(filepath.Join(p.dir, "w.etdi.json"))
	if err != nil {
		t.Fatal(err)
	}
	writeText(t, filepath.Join(dir, "bundles", "w.etdi.json"), string(data), 0o644)
	if r := runEtdi(t, dir, nil, "wrap", "--config", path, "--name", "a", "--bundle", "bundles/w.etdi.json"); r.code != 0 {
		t.Fatalf("wrap --bundle: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	abs := filepath.Join(dir, "bundles", "w.etdi.json")
	if got := readText(t, path); !strings.Contains(got, `["run", "--name", "a", "--bundle", `+jsonQuote(abs)+`, "--", "node", "a.js"]`) {
		t.Fatalf("wrapped entry:\n%s", got)
	}
	if r := runEtdi(t, dir, nil, "unwrap", "--config", path); r.code != 0 || readText(t, path) != text {
		t.Fatalf("unwrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The trust policy and pin database named in the person's environment
// (relative paths here) go into the wrapped entries as absolute paths:
// the host starts etdi without that environment, in another directory,
// and the gate still finds the approvals.
func TestCLIWrapCarriesTrustAndPins(t *testing.T) {
	dir := t.TempDir()
	writeText(t, filepath.Join(dir, "team", "trust.json"), `{"version":1,"unsigned":"warn","providers":[]}`, 0o644)
	cfg := filepath.Join(dir, "mcp.json")
	writeText(t, cfg, `{"mcpServers": {"echo": {"command": "`+echoServer(t)+`"}}}`, 0o600)
	mine := []string{"ETDI_TRUST=team/trust.json", "ETDI_PINS=team/pins.db"}
	if r := runEtdi(t, dir, mine, "check", "--config", cfg, "--yes"); r.code != 0 {
		t.Fatalf("approve: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runEtdi(t, dir, mine, "wrap", "--config", cfg); r.code != 0 || !strings.Contains(r.stdout, "1 wrapped") {
		t.Fatalf("wrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var entry struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	var file struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(readText(t, cfg)), &file); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(file.MCPServers["echo"], &entry); err != nil {
		t.Fatal(err)
	}
	want := []string{"run", "--trust", filepath.Join(dir, "team", "trust.json"), "--pins", filepath.Join(dir, "team", "pins.db"), "--name", "echo", "--"}
	if len(entry.Args) < len(want) || !slices.Equal(entry.Args[:len(want)], want) {
		t.Fatalf("wrapped arguments %q, want them to start %q", entry.Args, want)
	}
	// The host: another home, another directory, no ETDI_ variables.
	host := exec.Command(entry.Command, entry.Args...)
	host.Dir = t.TempDir()
	host.Env = []string{"HOME=" + host.Dir, "XDG_CONFIG_HOME=" + filepath.Join(host.Dir, ".config"), "PATH=" + os.Getenv("PATH")}
	h := startRaw(t, host)
	h.ask(t, 1, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw-host","version":"1"}}`)
	h.notify("notifications/initialized")
	var list struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(h.ask(t, 2, "tools/list", `{}`), &list); err != nil || len(list.Result.Tools) == 0 {
		t.Fatalf("tools through the wrapped entry: %+v %v", list, err)
	}
	// An explicit --trust wins over the environment; a relative one is
	// written absolute too.
	if r := runEtdi(t, dir, nil, "unwrap", "--config", cfg); r.code != 0 {
		t.Fatalf("unwrap: exit %d\n%s", r.code, r.stderr)
	}
	if r := runEtdi(t, dir, mine, "wrap", "--config", cfg, "--trust", "team/../team/trust.json", "--dry-run"); r.code != 0 || !strings.Contains(r.stdout, filepath.Join(dir, "team", "trust.json")) {
		t.Fatalf("wrap --trust: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
