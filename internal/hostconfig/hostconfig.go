// Package hostconfig reads the MCP server entries of host applications'
// configuration files: Claude Desktop, Claude Code, Cursor, VS Code (mcp.json
// and the "mcp" key of settings.json, stable and Insiders), Windsurf, Gemini
// CLI, Zed, Cline, Kiro, Amazon Q Developer and Codex CLI (TOML), on Linux,
// macOS and Windows (docs/hosts.md#host-configuration-files).
//
// Where each host keeps its files depends on the platform; Locations takes
// the platform (GOOS) and its environment as arguments and never looks at
// the running OS, so every platform's lookup is tested anywhere.
//
// Variables are resolved only from the environment: ${env:NAME}, ${NAME}
// and ${NAME:-default}, plus ${userHome} and ${workspaceFolder}. A
// ${input:ID} placeholder (prompted by the host at launch) is replaced only
// by a value the user gives (Options.Inputs); one that is not given, or a
// variable that is not set, is reported as a problem of the entry, never
// guessed.
package hostconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/etdi-dev/etdi/internal/redact"
	"github.com/etdi-dev/etdi/strictjson"
)

// Hosts known to Discover, by id.
const (
	ClaudeDesktop = "claude-desktop"
	ClaudeCode    = "claude-code"
	Cursor        = "cursor"
	VSCode        = "vscode"
	Windsurf      = "windsurf"
	Gemini        = "gemini"
	Zed           = "zed"
	Cline         = "cline"
	Kiro          = "kiro"
	AmazonQ       = "amazonq"
	Codex         = "codex"
)

// Entry is one configured server.
type Entry struct {
	// Name is the entry's name in the file; it is the server's identity
	// in the pin database.
	Name string `json:"name"`
	Host string `json:"host"`
	File string `json:"file"`
	// Line is the line of the file where the entry starts (1-based; 0 if
	// unknown).
	Line int `json:"line,omitempty"`
	// Project is set for entries of a project-scoped file (a .mcp.json or
	// .vscode/mcp.json in the working directory): the repository, not the
	// user, wrote them.
	Project bool `json:"project,omitempty"`
	// Command and Args start a stdio server; URL names an HTTP server.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"-"` // values may be secrets: never printed
	EnvKeys []string          `json:"envKeys,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"-"` // may hold tokens: never printed
	// Transport is "stdio", "http" or "sse".
	Transport string `json:"transport"`
	// Problems are reasons the entry cannot be started as configured.
	Problems []string `json:"problems,omitempty"`
	// Wrapped is set when the entry runs the server through `etdi run`
	// (docs/hosts.md#wrapping-host-configurations); Command, Args, URL and Headers are then those of the
	// server behind it.
	Wrapped bool `json:"wrapped,omitempty"`
	// Bundle is the --bundle the wrapped entry gives etdi run, if any: the
	// server is checked with it.
	Bundle string `json:"bundle,omitempty"`
	// Imitation says why an entry whose program is named etdi, with run
	// as its first argument, is not wrapped: its program is not the
	// user's etdi (Options.Gate). The whole command is then the server.
	Imitation string `json:"imitation,omitempty"`
	// GateOverrides are the trust policy, pin store and lockfile a
	// wrapped entry's etdi run uses instead of the user's.
	GateOverrides []GateOverride `json:"gateOverrides,omitempty"`
	// Launch is the SHA-256 (hex) of the configuration file's absolute
	// path, the entry's name and the entry exactly as written (before any
	// variable is resolved): what a launch approval of a project-scoped
	// entry is bound to (docs/hosts.md#host-configuration-files).
	Launch string `json:"launch,omitempty"`
	// Disabled is set for an entry turned off in its file ("disabled":
	// true, "enabled": false); HostHonoursDisabled says whether its host
	// keeps it from starting (the host table, docs/hosts.md#host-configuration-files): yes, and the
	// entry is neither started nor read further; no or unknown, and it
	// is read and checked like any other, as the host may start it.
	Disabled            bool `json:"disabled,omitempty"`
	HostHonoursDisabled Fact `json:"hostHonoursDisabled,omitempty"`
	// Ambiguous says why what the entry starts is not established for
	// its host (a command and a URL, an unknown type, a type the members
	// contradict): such an entry is never started nor wrapped.
	Ambiguous string `json:"ambiguous,omitempty"`
	// Ignored are members naming another server that the host ignores
	// (Gemini CLI's command beside httpUrl or url).
	Ignored []string `json:"ignored,omitempty"`
	// Program is the program the host starts, found as the host finds
	// it (the entry's env PATH, else the host's, and the directory it
	// starts the server in); Dir is that directory ("" when it is not
	// established). Unresolved says why the program could not be found
	// that way: it is then not started.
	Program    string `json:"program,omitempty"`
	Dir        string `json:"dir,omitempty"`
	Unresolved string `json:"unresolved,omitempty"`
}

// NotStarted reports an entry its host is known not to start: disabled
// by a member the host honours.
func (e *Entry) NotStarted() bool { return e.Disabled && e.HostHonoursDisabled == Yes }

// AddSecrets adds to s what of the entry must never be shown: its env
// values, its header values, the user information and query values of its
// URL, and the NAME=VALUE and credential-like values of its arguments.
//
// A placeholder left unresolved (reported in Problems) is the file's text,
// not a value: only the text around it is added, so the problem stays
// readable.
func (e *Entry) AddSecrets(s *redact.Set) {
	for _, m := range []map[string]string{e.Env, e.Headers} {
		for _, k := range sortedKeys(m) {
			s.Add(varRE().Split(m[k], -1)...)
		}
	}
	if e.URL != "" {
		s.AddURL(e.URL)
	}
	s.AddArgs(e.Args)
}

// MarshalJSON encodes the entry as it may be shown: its URL as redact.URL
// shows it and its arguments as redact.Args shows them, with AddSecrets'
// values masked; env and header values are never encoded.
func (e Entry) MarshalJSON() ([]byte, error) {
	type plain Entry
	var s redact.Set
	e.AddSecrets(&s)
	p := plain(e)
	if p.URL != "" {
		p.URL = s.String(redact.URL(p.URL))
	}
	if p.Args != nil {
		p.Args = redact.Args(p.Args)
		for i, a := range p.Args {
			p.Args[i] = s.String(a)
		}
	}
	p.Command = s.String(p.Command)
	p.Imitation = s.String(p.Imitation)
	if p.GateOverrides != nil {
		p.GateOverrides = append([]GateOverride(nil), p.GateOverrides...)
		for i, o := range p.GateOverrides {
			if strings.Contains(o.Entry, "://") {
				p.GateOverrides[i].Entry = redact.URL(o.Entry)
			}
		}
	}
	p.Program = s.String(p.Program)
	p.Dir = s.String(p.Dir)
	p.Cwd = s.String(p.Cwd)
	p.Unresolved = s.String(p.Unresolved)
	p.Ambiguous = s.String(p.Ambiguous)
	return json.Marshal(p)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Options say where a configuration file is read: the user's home, the
// working (project) directory, the environment, and the values the user
// gives for ${input:ID} placeholders.
type Options struct {
	Home   string
	Cwd    string
	Lookup func(string) (string, bool)
	Inputs map[string]string
	// Gate is the user's own etdi: only an entry whose program is one of
	// its programs is wrapped (docs/hosts.md#wrapping-host-configurations).
	Gate Gate
}

func (o *Options) getenv(name string) string {
	if o.Lookup == nil {
		return ""
	}
	v, _ := o.Lookup(name)
	return v
}

// Location is a configuration file to look for.
type Location struct {
	Host string
	Path string
	// Project marks a file in the working directory.
	Project bool
}

// Locations returns the configuration files Discover looks at on platform
// goos ("linux", "darwin", "windows"; others are treated as linux), for the
// home, working directory and environment in o. User files come first,
// then project files.
func Locations(goos string, o Options) []Location {
	home := o.Home
	if goos == "windows" {
		if up := o.getenv("USERPROFILE"); up != "" {
			home = up
		}
	}
	// appData is where desktop applications keep their settings: the XDG
	// configuration directory on Linux, Application Support on macOS,
	// %APPDATA% on Windows.
	var appData string
	switch goos {
	case "darwin":
		appData = filepath.Join(home, "Library", "Application Support")
	case "windows":
		appData = o.getenv("APPDATA")
		if appData == "" {
			appData = filepath.Join(home, "AppData", "Roaming")
		}
	default:
		appData = o.getenv("XDG_CONFIG_HOME")
		if appData == "" {
			appData = filepath.Join(home, ".config")
		}
	}
	// Zed keeps ~/.config/zed on Linux and macOS alike.
	zedDir := filepath.Join(home, ".config", "zed")
	switch goos {
	case "windows":
		zedDir = filepath.Join(appData, "Zed")
	case "darwin":
	default:
		zedDir = filepath.Join(appData, "zed")
	}
	codexHome := o.getenv("CODEX_HOME")
	if codexHome == "" {
		codexHome = filepath.Join(home, ".codex")
	}
	locs := []Location{
		{Host: ClaudeDesktop, Path: filepath.Join(appData, "Claude", "claude_desktop_config.json")},
		{Host: ClaudeCode, Path: filepath.Join(home, ".claude.json")},
		{Host: Cursor, Path: filepath.Join(home, ".cursor", "mcp.json")},
	}
	for _, code := range []string{"Code", "Code - Insiders"} {
		user := filepath.Join(appData, code, "User")
		locs = append(locs,
			Location{Host: VSCode, Path: filepath.Join(user, "mcp.json")},
			Location{Host: VSCode, Path: filepath.Join(user, "settings.json")},
			Location{Host: Cline, Path: filepath.Join(user, "globalStorage", "saoudrizwan.claude-dev", "settings", "cline_mcp_settings.json")})
	}
	locs = append(locs,
		Location{Host: Windsurf, Path: filepath.Join(home, ".codeium", "windsurf", "mcp_config.json")},
		Location{Host: Gemini, Path: filepath.Join(home, ".gemini", "settings.json")},
		Location{Host: Zed, Path: filepath.Join(zedDir, "settings.json")},
		Location{Host: Kiro, Path: filepath.Join(home, ".kiro", "settings", "mcp.json")},
		Location{Host: AmazonQ, Path: filepath.Join(home, ".aws", "amazonq", "mcp.json")},
		Location{Host: Codex, Path: filepath.Join(codexHome, "config.toml")},
	)
	if o.Cwd != "" {
		for _, l := range []Location{
			{Host: ClaudeCode, Path: filepath.Join(o.Cwd, ".mcp.json")},
			{Host: Cursor, Path: filepath.Join(o.Cwd, ".cursor", "mcp.json")},
			{Host: VSCode, Path: filepath.Join(o.Cwd, ".vscode", "mcp.json")},
			{Host: Gemini, Path: filepath.Join(o.Cwd, ".gemini", "settings.json")},
			{Host: Kiro, Path: filepath.Join(o.Cwd, ".kiro", "settings", "mcp.json")},
			{Host: AmazonQ, Path: filepath.Join(o.Cwd, ".amazonq", "mcp.json")},
			{Host: Zed, Path: filepath.Join(o.Cwd, ".zed", "settings.json")},
		} {
			l.Project = true
			locs = append(locs, l)
		}
	}
	return locs
}

// Discover reads every known configuration file of platform goos that
// exists. It returns the entries, the files it read, and every path it
// looked at (to tell a user who has none where etdi searched).
func Discover(goos string, o Options) (entries []Entry, found, searched []string, err error) {
	seen := map[string]bool{}
	for _, l := range Locations(goos, o) {
		abs, _ := filepath.Abs(l.Path)
		if seen[abs] {
			continue
		}
		seen[abs] = true
		searched = append(searched, l.Path)
		if _, err := os.Stat(l.Path); err != nil {
			continue
		}
		es, err := Load(l.Path, l.Host, o)
		if err != nil {
			return nil, nil, searched, err
		}
		found = append(found, l.Path)
		for i := range es {
			es[i].Project = es[i].Project || l.Project
		}
		entries = append(entries, es...)
	}
	return entries, found, searched, nil
}

// GuessHost names the host of a configuration file from its path.
func GuessHost(path string) string {
	slash := filepath.ToSlash(path)
	base := filepath.Base(path)
	dir := filepath.Base(filepath.Dir(path))
	switch {
	case base == "claude_desktop_config.json":
		return ClaudeDesktop
	case base == ".claude.json" || base == ".mcp.json":
		return ClaudeCode
	case base == "mcp_config.json":
		return Windsurf
	case base == "cline_mcp_settings.json":
		return Cline
	case base == "config.toml" || strings.HasSuffix(base, ".toml"):
		return Codex
	case base == "settings.json" && (dir == "zed" || dir == "Zed" || dir == ".zed"):
		return Zed
	case base == "settings.json" && dir == "User":
		return VSCode
	case base == "settings.json":
		return Gemini
	case base == "mcp.json" && dir == ".cursor":
		return Cursor
	case base == "mcp.json" && (dir == ".vscode" || dir == "User"):
		return VSCode
	case base == "mcp.json" && strings.Contains(slash, "/.kiro/"):
		return Kiro
	case base == "mcp.json" && (dir == "amazonq" || dir == ".amazonq"):
		return AmazonQ
	}
	return ""
}

// MaxConfigSize bounds a configuration file.
const MaxConfigSize = 16 << 20

// Load reads one configuration file. host may be empty to guess it from
// the file name and content. o.Cwd is the project directory (for Claude
// Code's per-project entries and ${workspaceFolder}).
func Load(path, host string, o Options) ([]Entry, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	return loadData(path, data, host, o)
}

// ReadConfig reads a configuration file of at most MaxConfigSize bytes.
func ReadConfig(path string) ([]byte, error) { return readLimited(path) }

func loadData(path string, data []byte, host string, o Options) ([]Entry, error) {
	if host == "" {
		host = GuessHost(path)
	}
	if host == Codex || strings.HasSuffix(path, ".toml") {
		return loadCodex(path, data, o)
	}
	v, err := strictjson.Parse(StripJSONC(data))
	if err != nil {
		return nil, positionError(path, data, err)
	}
	if v.Kind != strictjson.Object {
		return nil, fmt.Errorf("%s: not a JSON object", path)
	}
	servers, host := jsonServerLists(v, host, o.Cwd)
	// The same text with every value's span: an entry's line is where its
	// member name is written, in the server list it was read from.
	spans, _ := ParseJSONC(data)
	workspace := o.Cwd
	if dir := filepath.Base(filepath.Dir(path)); dir == ".vscode" || dir == ".cursor" || dir == ".zed" || dir == ".amazonq" {
		workspace = filepath.Dir(filepath.Dir(path))
	}
	r := resolver{home: o.Home, workspace: workspace, lookup: o.Lookup, inputs: o.Inputs, gate: &o.Gate, host: host, project: ProjectDir(path, o.Cwd)}
	var out []Entry
	for _, l := range servers {
		entries, err := loadList(path, data, spans, l, host, &r)
		if err != nil {
			return nil, err
		}
		out = append(out, entries...)
	}
	return out, nil
}

// serverList is a server list of a JSON configuration, with its path from
// the root, to find where its entries are written.
type serverList struct {
	v    *strictjson.Value
	path []string
}

// jsonServerLists returns the server lists of the JSON configuration v
// of host ("" when unknown) and the host they show it is; cwd is the
// directory whose per-project servers Claude Code would start.
func jsonServerLists(v *strictjson.Value, host, cwd string) ([]serverList, string) {
	var servers []serverList
	if s := v.Get("mcpServers"); s != nil {
		servers = append(servers, serverList{s, []string{"mcpServers"}})
	}
	if s := v.Get("servers"); s != nil && (host == VSCode || host == "") {
		servers = append(servers, serverList{s, []string{"servers"}})
		if host == "" {
			host = VSCode
		}
	}
	// VS Code's settings.json keeps them under "mcp": {"servers": {...}}.
	if m := v.Get("mcp"); m != nil && m.Kind == strictjson.Object && (host == VSCode || host == "") {
		if s := m.Get("servers"); s != nil {
			servers = append(servers, serverList{s, []string{"mcp", "servers"}})
			host = VSCode
		}
	}
	// Zed calls them context servers.
	if s := v.Get("context_servers"); s != nil && (host == Zed || host == "") {
		servers = append(servers, serverList{s, []string{"context_servers"}})
		host = Zed
	}
	// Claude Code keeps per-project servers under projects[<dir>].
	if p := v.Get("projects"); p != nil && p.Kind == strictjson.Object && cwd != "" {
		if abs, err := filepath.Abs(cwd); err == nil {
			if proj := p.Get(abs); proj != nil && proj.Kind == strictjson.Object {
				if s := proj.Get("mcpServers"); s != nil {
					servers = append(servers, serverList{s, []string{"projects", abs, "mcpServers"}})
				}
			}
		}
	}
	return servers, host
}

// loadList reads the entries of the server list l of the file path
// (data, and spans its values' spans, nil when unknown).
func loadList(path string, data []byte, spans *Node, l serverList, host string, r *resolver) ([]Entry, error) {
	s := l.v
	if s.Kind != strictjson.Object {
		return nil, fmt.Errorf("%s: the server list is a %s, not an object", path, s.Kind)
	}
	var listNode *Node
	if spans != nil {
		listNode = nodeAt(spans, l.path)
	}
	row := LaunchOf(host)
	var out []Entry
	for _, m := range s.Members {
		var e Entry
		off := disabledBy(m.Value)
		if off != "" && row.DisabledFact(off) == Yes {
			// The host does not start it; neither does etdi.
			e = Entry{Name: m.Name, Host: host, File: path}
		} else {
			var err error
			if e, err = entry(m.Name, m.Value, host, path, r); err != nil {
				return nil, err
			}
		}
		if off != "" {
			e.Disabled, e.HostHonoursDisabled = true, row.DisabledFact(off)
		}
		e.Line = entryLine(data, listNode, m.Name)
		e.Launch = launchDigest(path, m.Name, strictjson.AppendCanonical(nil, m.Value))
		out = append(out, e)
	}
	return out, nil
}

// launchDigest binds a launch approval to the file, the entry's name and
// the entry's text.
func launchDigest(path, name string, entry []byte) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(abs), []byte(name), entry} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// disabledBy returns the member that turns an entry off, as the host
// table names it (`"disabled": true`, as Cline and Kiro write, or
// `"enabled": false`), or "" for an entry that is not turned off.
// Whether the host honours it is the host table's to say.
func disabledBy(v *strictjson.Value) string {
	if v.Kind != strictjson.Object {
		return ""
	}
	if d := v.Get("disabled"); d != nil && d.Kind == strictjson.Bool && d.Bool {
		return `"disabled": true`
	}
	if en := v.Get("enabled"); en != nil && en.Kind == strictjson.Bool && !en.Bool {
		return `"enabled": false`
	}
	return ""
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxConfigSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxConfigSize)
	}
	data := make([]byte, 0, fi.Size())
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		data = append(data, buf[:n]...)
		if len(data) > MaxConfigSize {
			return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxConfigSize)
		}
		if err != nil {
			break
		}
	}
	return data, nil
}

// positionError turns a parse error's byte offset into the line and column
// of the original file (StripJSONC keeps every offset in place).
func positionError(path string, data []byte, err error) error {
	var se *strictjson.SyntaxError
	if !errors.As(err, &se) {
		return fmt.Errorf("%s: %w", path, err)
	}
	line, col := LineCol(data, se.Offset)
	return fmt.Errorf("%s:%d:%d: invalid JSON: %s", path, line, col, se.Msg)
}

// LineCol returns the 1-based line and column (in characters) of byte
// offset off in data.
func LineCol(data []byte, off int) (line, col int) {
	if off > len(data) {
		off = len(data)
	}
	line, start := 1, 0
	for i := 0; i < off; i++ {
		if data[i] == '\n' {
			line++
			start = i + 1
		}
	}
	return line, len([]rune(string(data[start:off]))) + 1
}

// entryLine returns the line where member name of the server list node
// is written; without the node (text the span parser does not take), the
// line of the first member of that name anywhere (0 if none).
func entryLine(data []byte, list *Node, name string) int {
	if m := list.Member(name); m != nil {
		line, _ := LineCol(data, m.NameStart)
		return line
	}
	return lineOfName(data, name)
}

// lineOfName returns the line of the first member named name, as written
// in the file (0 if not found).
func lineOfName(data []byte, name string) int {
	quoted := fmt.Sprintf("%q", name)
	re, err := regexp.Compile(regexp.QuoteMeta(quoted) + `\s*:`)
	if err != nil {
		return 0
	}
	loc := re.FindIndex(data)
	if loc == nil {
		return 0
	}
	line, _ := LineCol(data, loc[0])
	return line
}

func entry(name string, v *strictjson.Value, host, file string, r *resolver) (Entry, error) {
	e := Entry{Name: name, Host: host, File: file}
	if v.Kind != strictjson.Object {
		return e, fmt.Errorf("%s: server %q is a %s, not an object", file, name, v.Kind)
	}
	v = flattenZed(v, host)
	str := func(key string) (string, error) {
		f := v.Get(key)
		if f == nil {
			return "", nil
		}
		if f.Kind != strictjson.String {
			return "", fmt.Errorf("%s: server %q: %s is a %s, not a string", file, name, key, f.Kind)
		}
		return r.expand(f.Str, &e.Problems, key), nil
	}
	var err error
	if e.Command, err = str("command"); err != nil {
		return e, err
	}
	if e.Cwd, err = str("cwd"); err != nil {
		return e, err
	}
	// What the entry starts, as its host reads it.
	m := members{command: v.Get("command") != nil}
	urls := map[string]string{}
	for _, mem := range v.Members {
		for _, key := range anyURL {
			if mem.Name == key {
				m.urls = append(m.urls, key)
			}
		}
	}
	for _, key := range anyURL {
		u, err := str(key)
		if err != nil {
			return e, err
		}
		urls[key] = u
		if u == "" && slices.Contains(m.urls, key) {
			m.empty = append(m.empty, key)
		}
	}
	typ, err := str("type")
	if err != nil {
		return e, err
	}
	m.typ, m.hasType = typ, v.Get("type") != nil
	if err := readArgsEnvHeaders(&e, v, file, r); err != nil {
		return e, err
	}
	l := LaunchOf(host)
	e.apply(l.decide(m), urls)
	if e.Transport == "stdio" {
		e.lookThrough(r.lookup, r.gate, r.workspace, writtenOf(v))
		e.wrappedTransport()
		e.resolveProgram(l, r.project, r.lookup)
	}
	return e, nil
}

// flattenZed returns the entry v of host with Zed's older form, which
// nests the command ({"command": {"path", "args", "env"}}), flattened.
func flattenZed(v *strictjson.Value, host string) *strictjson.Value {
	c := v.Get("command")
	if c == nil || c.Kind != strictjson.Object || host != Zed {
		return v
	}
	flat := &strictjson.Value{Kind: strictjson.Object}
	for _, m := range v.Members {
		if m.Name != "command" {
			flat.Members = append(flat.Members, m)
		}
	}
	for _, m := range c.Members {
		switch m.Name {
		case "path":
			flat.Members = append(flat.Members, strictjson.Member{Name: "command", Value: m.Value})
		case "args", "env":
			flat.Members = append(flat.Members, m)
		}
	}
	return flat
}

// readArgsEnvHeaders reads the args, env and headers of the entry v into
// e, their variables expanded by r.
func readArgsEnvHeaders(e *Entry, v *strictjson.Value, file string, r *resolver) error {
	name := e.Name
	if a := v.Get("args"); a != nil {
		if a.Kind != strictjson.Array {
			return fmt.Errorf("%s: server %q: args is a %s, not an array", file, name, a.Kind)
		}
		for i, x := range a.Elems {
			if x.Kind != strictjson.String {
				return fmt.Errorf("%s: server %q: args[%d] is a %s, not a string", file, name, i, x.Kind)
			}
			e.Args = append(e.Args, r.expand(x.Str, &e.Problems, fmt.Sprintf("args[%d]", i)))
		}
	}
	for _, key := range []string{"env", "headers"} {
		obj := v.Get(key)
		if obj == nil {
			continue
		}
		if obj.Kind != strictjson.Object {
			return fmt.Errorf("%s: server %q: %s is a %s, not an object", file, name, key, obj.Kind)
		}
		m := map[string]string{}
		for _, mem := range obj.Members {
			if mem.Value.Kind != strictjson.String {
				return fmt.Errorf("%s: server %q: %s.%s is a %s, not a string", file, name, key, mem.Name, mem.Value.Kind)
			}
			m[mem.Name] = r.expand(mem.Value.Str, &e.Problems, key+"."+mem.Name)
		}
		if key == "env" {
			e.setEnv(m)
		} else {
			e.Headers = m
		}
	}
	return nil
}

// wrappedTransport is the transport of the server behind a wrapped
// entry's etdi run.
func (e *Entry) wrappedTransport() {
	switch {
	case !e.Wrapped:
	case e.Command != "":
		e.Transport = "stdio"
	case e.URL != "":
		e.Transport = "http"
	default:
		e.Transport = ""
	}
}

// apply makes the entry what the host's decision says it starts: the URL
// member it connects to (the command, its arguments, env and cwd then
// play no part), or the command; urls are the URL members' values.
func (e *Entry) apply(d decision, urls map[string]string) {
	e.Ignored = d.ignored
	switch {
	case d.ambiguous != "":
		e.Ambiguous = d.ambiguous
		e.Transport = ""
		return
	case d.url != "":
		e.URL = urls[d.url]
		if e.Command != "" {
			e.Command, e.Args, e.Cwd = "", nil, ""
			e.setEnv(nil)
		}
	default:
		e.URL = ""
	}
	e.Transport = d.transport
	switch d.transport {
	case "sse":
		e.Problems = append(e.Problems, "uses the deprecated SSE transport, which etdi does not speak; use Streamable HTTP")
	case "":
		e.Problems = append(e.Problems, "has neither a command nor a URL")
	}
}

func (e *Entry) setEnv(m map[string]string) {
	e.Env = m
	e.EnvKeys = e.EnvKeys[:0]
	for k := range m {
		e.EnvKeys = append(e.EnvKeys, k)
	}
	sort.Strings(e.EnvKeys)
}

type resolver struct {
	home, workspace string
	lookup          func(string) (string, bool)
	inputs          map[string]string
	gate            *Gate
	// host is the file's host; project its project folder.
	host, project string
}

var varRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([^}]*)\}`) })

// geminiVarRE is Gemini CLI's: ${...} and the bare $NAME.
var geminiVarRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$(?:\w+|\{[^}]*\})`) })

// expand resolves variables in s; unresolvable ones become problems and
// stay as written. Gemini CLI also expands $NAME, leaving an unset one as
// written, and so does etdi for its files.
func (r *resolver) expand(s string, problems *[]string, where string) string {
	re := varRE
	if r.host == Gemini {
		re = geminiVarRE
	}
	return re().ReplaceAllStringFunc(s, func(m string) string {
		if !strings.HasPrefix(m, "${") {
			if v, ok := lookupOrNil(r.lookup, m[1:]); ok {
				return v
			}
			return m
		}
		inner := m[2 : len(m)-1]
		switch {
		case strings.HasPrefix(inner, "input:"):
			if v, ok := r.inputs[strings.TrimPrefix(inner, "input:")]; ok {
				return v
			}
			*problems = append(*problems, fmt.Sprintf("%s uses %s, which the host asks for at launch; give it with --input %s=VALUE", where, m, strings.TrimPrefix(inner, "input:")))
			return m
		case inner == "userHome":
			return r.home
		case inner == "workspaceFolder":
			return r.workspace
		case strings.HasPrefix(inner, "env:"):
			inner = strings.TrimPrefix(inner, "env:")
		}
		name, def, hasDef := strings.Cut(inner, ":-")
		if !isEnvName(name) {
			*problems = append(*problems, fmt.Sprintf("%s uses %s, which etdi cannot resolve", where, m))
			return m
		}
		if r.lookup != nil {
			if v, ok := r.lookup(name); ok && v != "" {
				return v
			}
		}
		if hasDef {
			return def
		}
		*problems = append(*problems, fmt.Sprintf("%s uses environment variable %s, which is not set", where, name))
		return m
	})
}

func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// StripJSONC blanks // and /* */ comments outside strings and commas
// before a closing bracket, turning VS Code's JSON with comments into JSON.
// Every removed byte becomes a space (line breaks stay), so byte offsets,
// lines and columns in the result are those of the original file.
func StripJSONC(data []byte) []byte {
	out := make([]byte, len(data))
	copy(out, data)
	inStr, esc := false, false
	lastComma := -1 // offset of a comma that only blanks may follow so far
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
			lastComma = -1
		case c == '/' && i+1 < len(data) && data[i+1] == '/':
			i = blankLineComment(data, out, i)
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			i = blankBlockComment(data, out, i)
		case c == ',':
			lastComma = i
		case c == '}' || c == ']':
			if lastComma >= 0 {
				out[lastComma] = ' '
			}
			lastComma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			lastComma = -1
		}
	}
	return out
}

// blankOut turns out[i] into a space unless it is a line break.
func blankOut(out []byte, i int) {
	if out[i] != '\n' && out[i] != '\r' {
		out[i] = ' '
	}
}

// blankLineComment blanks in out the // comment of data at i and returns
// the offset of the line break that ends it (or len(data)).
func blankLineComment(data, out []byte, i int) int {
	for i < len(data) && data[i] != '\n' {
		blankOut(out, i)
		i++
	}
	return i
}

// blankBlockComment blanks in out the /* */ comment of data at i and
// returns the offset of its last byte (or len(data) when it is not
// closed).
func blankBlockComment(data, out []byte, i int) int {
	blankOut(out, i)
	blankOut(out, i+1)
	i += 2
	for i < len(data) && !(data[i] == '*' && i+1 < len(data) && data[i+1] == '/') {
		blankOut(out, i)
		i++
	}
	if i < len(data) {
		blankOut(out, i)
		if i+1 < len(data) {
			blankOut(out, i+1)
		}
		i++
	}
	return i
}

// ErrNoConfig is returned when no configuration file is found.
var ErrNoConfig = errors.New("no MCP host configuration found")
