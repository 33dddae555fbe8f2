package hostconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Fact is what etdi knows of one behaviour of a host: yes, no, or unknown
// (not established from the host's source or documentation). An unknown
// fact is taken the safe way: a host that may start a disabled entry is
// assumed to start it; an entry whose meaning is not established is
// ambiguous.
type Fact string

// Facts.
const (
	Yes     Fact = "yes"
	No      Fact = "no"
	Unknown Fact = "unknown"
)

// Launch is how one host reads a server entry and starts its server: the
// row of the host table (docs/hosts.md#host-configuration-files). Every host reads the program's
// PATH the same way: the entry's env PATH when the entry sets one, else
// the host's own (Node's child_process.spawn, which the MCP SDK's stdio
// transport calls, and Rust's std::process::Command both look the
// program up on the child's PATH).
type Launch struct {
	Host string
	// Name is the host as people call it.
	Name string
	// URLKeys are the members naming a remote server the host reads, in
	// the host's order of precedence.
	URLKeys []string
	// URLFirst: an entry with a URL member and a command is connected to
	// by URL, the command ignored; several URL members are taken in the
	// order of URLKeys. Set only where the host's source establishes it;
	// otherwise such an entry is ambiguous.
	URLFirst bool
	// Types are the values of "type" the host knows, with the transport
	// each means ("stdio", "http", "sse"); nil when the host reads no
	// type member.
	Types map[string]string
	// Both says what the host does with an entry that has a command and
	// a URL, for the message that refuses it.
	Both string
	// Disabled is the member and value the host honours to keep an entry
	// from starting (`"disabled": true`, `"enabled": false`); Honours
	// whether it honours it.
	Disabled string
	Honours  Fact
	// Dir says where the host starts a stdio server: "project" (the
	// project folder of a project file, else the host's working
	// directory, taken to be etdi's), or "" when not established.
	Dir string
	// Cwd says whether the host starts the server in the entry's cwd.
	Cwd Fact
	// Expands lists the variable forms the host expands in an entry.
	Expands string
	// Source says where these facts were read, with versions.
	Source string
	// Capabilities is the client capabilities object the host declares at
	// initialize, as it sends it: etdi check declares it when it lists
	// the host's servers, so that it approves what the host is offered
	// (servers offer some tools only to clients with roots, sampling or
	// elicitation). CapabilitiesSource says where it was read; a host
	// that could not be observed declares every capability the protocol
	// gives a client with requests of the server (defaultCapabilities):
	// approving a tool the host is never offered is harmless, leaving one
	// it is offered unapproved withholds it.
	Capabilities, CapabilitiesSource string
}

// defaultCapabilities are declared for a host whose own could not be
// observed: every client capability of the MCP specification (2025-06-18,
// "Client Features": roots, sampling, elicitation).
const (
	defaultCapabilities       = `{"roots":{},"sampling":{},"elicitation":{}}`
	defaultCapabilitiesSource = "not observed: the client capabilities of the MCP specification 2025-06-18 (roots, sampling, elicitation)"
)

// The types most hosts know.
var commonTypes = map[string]string{"stdio": "stdio", "http": "http", "streamable-http": "http", "streamableHttp": "http", "sse": "sse"}

var anyURL = []string{"url", "serverUrl", "httpUrl"}

// Launches is the host table: one row per host etdi reads (docs/hosts.md#host-configuration-files).
var Launches = []Launch{
	{Host: ClaudeDesktop, Name: "Claude Desktop", URLKeys: anyURL, Types: commonTypes,
		Both: "what Claude Desktop starts is not established", Disabled: `"disabled": true`, Honours: Unknown, Cwd: Unknown,
		Expands: "not established", Source: "not established from its source (closed); the file's documented members are command, args, env",
		Capabilities: defaultCapabilities, CapabilitiesSource: defaultCapabilitiesSource},
	{Host: ClaudeCode, Name: "Claude Code", URLKeys: []string{"url"}, Types: map[string]string{"stdio": "stdio", "http": "http", "streamable-http": "http", "sse": "sse"},
		Both: "Claude Code follows type (stdio when absent), which the repository chooses", Disabled: `"disabled": true`, Honours: No, Dir: "project", Cwd: Unknown,
		Expands:      "${VAR}, ${VAR:-default}",
		Source:       "docs code.claude.com/docs/en/mcp (type stdio/sse/http, streamable-http an alias; ${VAR} expansion in .mcp.json); anthropics/claude-code issues 17756, 33958 (v2.1.74), 43865: entries with \"disabled\": true in .mcp.json and ~/.claude.json are started; @anthropic-ai/claude-code 2.1.197 claude mcp list: a command and url without type start the command, type http beside a command connects to url, disabled entries (.mcp.json, ~/.claude.json) are started, the program is found on the entry's env PATH and relative to the project folder",
		Capabilities: `{"roots":{},"elicitation":{}}`, CapabilitiesSource: "@anthropic-ai/claude-code 2.1.197: the initialize of claude -p and of claude mcp list, seen by a stdio server that logs it"},
	{Host: Cursor, Name: "Cursor", URLKeys: anyURL, Types: commonTypes,
		Both: "what Cursor starts is not established", Disabled: `"disabled": true`, Honours: Unknown, Cwd: Unknown,
		Expands: "${env:NAME}, ${userHome}, ${workspaceFolder} (documented)", Source: "not established from its source (closed)",
		Capabilities: defaultCapabilities, CapabilitiesSource: defaultCapabilitiesSource},
	{Host: VSCode, Name: "VS Code", URLKeys: []string{"url"}, Types: map[string]string{"stdio": "stdio", "http": "http", "sse": "sse"},
		Both: "VS Code connects to url in some versions and starts the command in others", Disabled: `"disabled": true`, Honours: No, Cwd: Unknown,
		Expands:      "${workspaceFolder}, ${userHome}, ${env:NAME}, ${input:ID}",
		Source:       "microsoft/vscode src/vs/workbench/contrib/mcp/common/discovery/configMcpDiscovery.ts: at 9eab112 an entry with url is HTTP whatever its type or command; at 0404e19 type sse is SSE and every other entry stdio; neither reads disabled, enabled or cwd (cwd: undefined)",
		Capabilities: defaultCapabilities, CapabilitiesSource: defaultCapabilitiesSource},
	{Host: Windsurf, Name: "Windsurf", URLKeys: anyURL, Types: commonTypes,
		Both: "what Windsurf starts is not established", Disabled: `"disabled": true`, Honours: Unknown, Cwd: Unknown,
		Expands: "not established", Source: "not established from its source (closed)",
		Capabilities: defaultCapabilities, CapabilitiesSource: defaultCapabilitiesSource},
	{Host: Gemini, Name: "Gemini CLI", URLKeys: []string{"httpUrl", "url"}, URLFirst: true, Types: map[string]string{"stdio": "stdio", "http": "http", "sse": "sse"},
		Both: "Gemini CLI connects to httpUrl, else url, and never starts the command", Disabled: `"disabled": true`, Honours: No, Dir: "project", Cwd: Yes,
		Expands:      "$VAR, ${VAR}, ${VAR:-default} (the whole settings file)",
		Source:       "google-gemini/gemini-cli 0.56.0-nightly.20260806 (5411f11): packages/core/src/tools/mcp-client.ts createTransport/createUrlTransport (httpUrl, then url with type http/sse, then command; spawn with cwd and env over the sanitized process environment); packages/core/src/config/config.ts MCPServerConfig has no disabled or enabled member; packages/cli/src/utils/envVarResolver.ts; @google/gemini-cli 0.61.0 gemini mcp list: a command beside httpUrl is listed as the URL (http) and not started, disabled and enabled are reported as unrecognized keys and the entries started, the program is found on the entry's env PATH and relative to the project folder",
		Capabilities: `{"roots":{"listChanged":true}}`, CapabilitiesSource: "@google/gemini-cli 0.61.0: the initialize of gemini -p, seen by a stdio server that logs it (gemini mcp list declares none, but only tests the connection); packages/core/src/tools/mcp-client.ts connectToMcpServer registers roots with listChanged"},
	{Host: Zed, Name: "Zed", URLKeys: anyURL, Types: commonTypes,
		Both: "what Zed starts is not established", Disabled: `"enabled": false`, Honours: Unknown, Cwd: Unknown,
		Expands: "not established", Source: "not established from its source",
		Capabilities: defaultCapabilities, CapabilitiesSource: defaultCapabilitiesSource},
	{Host: Cline, Name: "Cline", URLKeys: anyURL, Types: map[string]string{"stdio": "stdio", "sse": "sse", "streamableHttp": "http"},
		Both: "what Cline starts is not established", Disabled: `"disabled": true`, Honours: Yes, Cwd: Unknown,
		Expands:      "not established",
		Source:       "cline/cline src/services/mcp/McpHub.ts: a server whose config has disabled set gets a placeholder connection and is not connected",
		Capabilities: defaultCapabilities, CapabilitiesSource: defaultCapabilitiesSource},
	{Host: Kiro, Name: "Kiro", URLKeys: anyURL, Types: commonTypes,
		Both: "what Kiro starts is not established", Disabled: `"disabled": true`, Honours: Yes, Cwd: Unknown,
		Expands: "${VAR} (documented)", Source: "docs kiro.dev/docs/mcp/configuration (disabled, \"Disabling servers temporarily\")",
		Capabilities: defaultCapabilities, CapabilitiesSource: defaultCapabilitiesSource},
	{Host: AmazonQ, Name: "Amazon Q Developer", URLKeys: anyURL, Types: commonTypes,
		Both: "what Amazon Q Developer starts is not established", Disabled: `"disabled": true`, Honours: Unknown, Cwd: Unknown,
		Expands: "not established", Source: "not established from its source",
		Capabilities: defaultCapabilities, CapabilitiesSource: defaultCapabilitiesSource},
	{Host: Codex, Name: "Codex CLI", URLKeys: []string{"url"},
		Both: "Codex CLI refuses the whole file (url is not supported for stdio)", Disabled: "enabled = false", Honours: Yes, Dir: "project", Cwd: Yes,
		Expands:      "none",
		Source:       "openai/codex codex-rs config (mcp_types.rs / config_types.rs): command selects stdio and a url beside it is an error; enabled defaults to true and false keeps the server from starting; cwd and env apply to stdio; docs developers.openai.com/codex/mcp",
		Capabilities: `{"experimental":{"codex/auth-change":{}},"elicitation":{"form":{},"url":{}}}`, CapabilitiesSource: "@openai/codex 0.169.0: the initialize of codex exec, seen by a stdio server that logs it"},
}

// unknownLaunch is the row of a file of no known host: nothing is
// established.
var unknownLaunch = Launch{Name: "the host", URLKeys: anyURL, Types: commonTypes, Both: "what the host starts is not established",
	Honours: Unknown, Cwd: Unknown, Expands: "not established", Source: "no host known for the file",
	Capabilities: defaultCapabilities, CapabilitiesSource: defaultCapabilitiesSource}

// LaunchOf returns the row of host (the unknown host's for an id etdi does
// not know).
func LaunchOf(host string) *Launch {
	for i := range Launches {
		if Launches[i].Host == host {
			return &Launches[i]
		}
	}
	return &unknownLaunch
}

// members are the members of an entry that decide what it starts.
type members struct {
	command bool
	urls    []string // URL members present, in the entry's order
	typ     string
	hasType bool
	// empty are the URL members present whose value is empty: a host
	// that tests a member's value, not its presence, skips them.
	empty []string
}

// decision is what the host makes of an entry.
type decision struct {
	// url is the URL member the host connects to; "" for the command.
	url string
	// transport is "stdio", "http" or "sse"; "" when there is no server.
	transport string
	// ignored are members naming another server that the host ignores.
	ignored []string
	// ambiguous says why the entry's meaning is not established.
	ambiguous string
}

// decide reads an entry's members as host l does.
func (l *Launch) decide(m members) decision {
	var d decision
	read := map[string]bool{}
	for _, k := range l.URLKeys {
		read[k] = true
	}
	var urls []string
	for _, u := range m.urls {
		if read[u] {
			urls = append(urls, u)
		} else {
			d.ignored = append(d.ignored, u)
		}
	}
	if len(m.empty) > 0 {
		d.ambiguous = fmt.Sprintf("its %s is empty, and whether %s reads an empty %s as no URL is not established", m.empty[0], l.Name, m.empty[0])
		return d
	}
	typed := ""
	if m.hasType {
		t, ok := l.Types[m.typ]
		if !ok {
			d.ambiguous = fmt.Sprintf("its type %q is not one %s knows", m.typ, l.Name)
			return d
		}
		typed = t
	}
	switch {
	case len(urls) > 1 && !l.URLFirst:
		d.ambiguous = fmt.Sprintf("it has both %s and %s, and which %s connects to is not established", urls[0], urls[1], l.Name)
		return d
	case len(urls) > 0 && m.command && !l.URLFirst:
		d.ambiguous = fmt.Sprintf("it has both a command and %s: %s", urls[0], l.Both)
		return d
	}
	if len(urls) > 0 {
		l.decideURL(&d, m, urls, typed)
		return d
	}
	if m.command {
		if typed == "http" || typed == "sse" {
			d.ambiguous = fmt.Sprintf("its type is %q, but it has a command and no URL", m.typ)
			return d
		}
		d.transport = "stdio"
	}
	return d
}

// decideURL completes d for an entry m that names a server by one of
// urls (those host l reads): the URL it connects to, in the host's order
// of precedence, the members it ignores, and the transport (typed is the
// entry's type as the host reads it).
func (l *Launch) decideURL(d *decision, m members, urls []string, typed string) {
	for _, k := range l.URLKeys {
		for _, u := range urls {
			if u == k && d.url == "" {
				d.url = u
			}
		}
	}
	for _, u := range urls {
		if u != d.url {
			d.ignored = append(d.ignored, u)
		}
	}
	if m.command {
		d.ignored = append(d.ignored, "command")
	}
	d.transport = "http"
	switch {
	case typed == "stdio":
		d.ambiguous = fmt.Sprintf("its type is %q, but it names a server by %s and no command", m.typ, d.url)
	case typed == "sse" && l.Host == Gemini && d.url == "httpUrl":
		d.ambiguous = fmt.Sprintf("its type is %q, but %s is Streamable HTTP to %s", m.typ, d.url, l.Name)
	case typed == "sse":
		d.transport = "sse"
	case l.Host == Gemini && d.url == "url" && !m.hasType:
		// Gemini CLI tries Streamable HTTP, then SSE; older versions
		// speak SSE to url alone.
		d.transport = "sse"
	}
}

// DisabledFact says whether the host keeps an entry from starting: Yes
// when the host honours the member the entry is disabled by, No when it
// is known not to, Unknown otherwise. member is `"disabled": true` or
// `"enabled": false` (Codex: `enabled = false`).
func (l *Launch) DisabledFact(member string) Fact {
	if l.Honours == Yes && l.Disabled != member {
		return No // it honours another member only
	}
	return l.Honours
}

// ProjectDir is the folder a host takes as the project of a configuration
// file: the folder holding .vscode, .cursor, .zed, .amazonq, .gemini or
// .kiro/settings, the folder of a .mcp.json, else the working directory.
func ProjectDir(path, cwd string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	dir := filepath.Dir(abs)
	switch base := filepath.Base(dir); {
	case base == ".vscode" || base == ".cursor" || base == ".zed" || base == ".amazonq" || base == ".gemini":
		return filepath.Dir(dir)
	case base == "settings" && filepath.Base(filepath.Dir(dir)) == ".kiro":
		return filepath.Dir(filepath.Dir(dir))
	case filepath.Base(abs) == ".mcp.json":
		return dir
	}
	if cwd != "" {
		if c, err := filepath.Abs(cwd); err == nil {
			return c
		}
	}
	return cwd
}

// resolveProgram finds the program a stdio entry starts as host l does:
// on the entry's env PATH when it sets one, else on the host's own (from
// lookup), in the directory the host starts it in. It sets Program and
// Dir, or Unresolved (etdi cannot tell what the host runs) or a problem
// (the host cannot start it either) with the reason. Nothing is looked up
// on etdi's own PATH. Without lookup (no environment given), nothing is
// resolved and Program stays empty: such an entry is not started.
func (e *Entry) resolveProgram(l *Launch, project string, lookup func(string) (string, bool)) {
	if e.Transport != "stdio" || e.Command == "" || lookup == nil {
		return
	}
	dir := ""
	switch {
	case e.Cwd != "" && l.Cwd == No:
		// The host does not read the member: where it starts the server
		// is its default.
		if l.Dir == "project" {
			dir = project
		}
	case e.Cwd != "" && filepath.IsAbs(e.Cwd):
		if l.Cwd == Yes {
			dir = filepath.Clean(e.Cwd)
		}
	case e.Cwd != "":
		if l.Cwd == Yes && l.Dir == "project" && project != "" {
			dir = filepath.Join(project, e.Cwd)
		}
	case l.Dir == "project":
		dir = project
	}
	e.Dir = dir
	path, pathSet, twice := envPath(e.EnvKeys, e.Env, runtime.GOOS == "windows")
	if twice != "" {
		e.Unresolved = fmt.Sprintf("which program %s starts for %q is not established: the entry sets PATH twice (%s), and which one the host uses is not established", l.Name, e.Command, twice)
		return
	}
	if !pathSet {
		var ok bool
		if path, ok = lookup("PATH"); !ok {
			return // the host's PATH is not known: not resolved
		}
	}
	prog, why, unsure := LookPath(e.Command, path, dir)
	if why != "" {
		where := "the host's PATH"
		if pathSet {
			where = "the PATH the entry sets"
		}
		if unsure {
			e.Unresolved = fmt.Sprintf("which program %s starts for %q is not established (on %s): %s", l.Name, e.Command, where, why)
		} else {
			// The host cannot start it either: not checked (exit 1).
			e.Problems = append(e.Problems, fmt.Sprintf("%s cannot start %q (on %s): %s", l.Name, e.Command, where, why))
		}
		return
	}
	e.Program = prog
}

// envPath is the PATH an entry's env sets (keys: its names),
// matched without case on Windows; twice names the members when it sets
// it more than once with different values (PATH and Path on Windows).
func envPath(keys []string, env map[string]string, windows bool) (path string, set bool, twice string) {
	var names []string
	for _, k := range keys {
		if k == "PATH" || windows && strings.EqualFold(k, "PATH") {
			if set && env[k] != path {
				twice = strings.Join(append(names, k), ", ")
			}
			names = append(names, k)
			path, set = env[k], true
		}
	}
	return path, set, twice
}

// LookPath finds program name as a host's child_process.spawn does: a
// name holding a directory is taken relative to dir; otherwise the first
// executable regular file of that name in a directory of path (on
// Windows, with each PATHEXT extension). Symbolic links are not followed
// in the path returned. Otherwise why says why not, and unsure whether
// the host may still find a program etdi cannot tell (a relative or empty
// PATH entry, which the host reads relative to dir, or a dir that is not
// known where it matters) rather than none at all.
func LookPath(name, path, dir string) (prog, why string, unsure bool) {
	if name == "" {
		return "", "the command is empty", false
	}
	if strings.ContainsAny(name, "\x00") {
		return "", "the command holds a NUL byte", false
	}
	if hasDirSep(name) {
		p := name
		if !filepath.IsAbs(name) {
			if dir == "" {
				return "", "it is a relative path, and the directory the host starts it in is not established", true
			}
			p = filepath.Join(dir, name)
		}
		for _, c := range programNames(p) {
			if executableFile(c) {
				return c, "", false
			}
		}
		return "", fmt.Sprintf("no executable file %s", p), false
	}
	// An empty PATH is one empty entry: the directory the host starts
	// the server in, as execvp reads it. A relative entry is named by its
	// place: PATH may hold a secret.
	dirs := filepath.SplitList(path)
	if path == "" {
		dirs = []string{""}
	}
	for i, d := range dirs {
		if d == "" || !filepath.IsAbs(d) {
			if dir == "" {
				return "", fmt.Sprintf("PATH holds a relative entry (#%d), which the host reads relative to a directory that is not established", i+1), true
			}
			if d == "" {
				d = "."
			}
			for _, c := range programNames(filepath.Join(dir, d, name)) {
				if _, err := os.Stat(c); err == nil {
					return "", fmt.Sprintf("it is found through a relative PATH entry (#%d)", i+1), true
				}
			}
			continue
		}
		for _, c := range programNames(filepath.Join(d, name)) {
			if executableFile(c) {
				return c, "", false
			}
		}
	}
	return "", "not found on that PATH", false
}

func hasDirSep(name string) bool {
	if runtime.GOOS == "windows" {
		return strings.ContainsAny(name, `/\:`)
	}
	return strings.Contains(name, "/")
}

// programNames are the files a program name can be: on Windows, with
// each PATHEXT extension unless it has one.
func programNames(p string) []string {
	if runtime.GOOS != "windows" {
		return []string{p}
	}
	exts := os.Getenv("PATHEXT")
	if exts == "" {
		exts = ".COM;.EXE;.BAT;.CMD"
	}
	for _, e := range strings.Split(exts, ";") {
		if e != "" && strings.EqualFold(filepath.Ext(p), e) {
			return []string{p}
		}
	}
	var out []string
	for _, e := range strings.Split(exts, ";") {
		if e != "" {
			out = append(out, p+e)
		}
	}
	return out
}

// executableFile reports a regular file (after symbolic links) that may
// be executed.
func executableFile(p string) bool {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	return runtime.GOOS == "windows" || fi.Mode().Perm()&0o111 != 0
}
