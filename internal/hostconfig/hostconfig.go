// Package hostconfig reads the MCP server entries of host applications'
// configuration files: Claude Desktop, Claude Code, Cursor, VS Code,
// Windsurf and Gemini CLI (SPEC.md §18).
//
// Variables are resolved only from the environment: ${env:NAME}, ${NAME}
// and ${NAME:-default}, plus ${userHome} and ${workspaceFolder}. A
// ${input:...} placeholder (prompted by the host at launch) or a variable
// that is not set is reported as a problem of the entry, never guessed.
package hostconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/redact"
)

// Hosts known to Discover, by id.
const (
	ClaudeDesktop = "claude-desktop"
	ClaudeCode    = "claude-code"
	Cursor        = "cursor"
	VSCode        = "vscode"
	Windsurf      = "windsurf"
	Gemini        = "gemini"
)

// Entry is one configured server.
type Entry struct {
	// Name is the entry's name in the file; it is the server's identity
	// in the pin database.
	Name string `json:"name"`
	Host string `json:"host"`
	File string `json:"file"`
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
}

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
			s.Add(varRE.Split(m[k], -1)...)
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

// Location is a configuration file to look for.
type Location struct {
	Host string
	Path string
}

// Locations returns the configuration files Discover looks at, for the
// given home and working directories.
func Locations(home, cwd string) []Location {
	cfg := os.Getenv("XDG_CONFIG_HOME")
	if cfg == "" {
		cfg = filepath.Join(home, ".config")
	}
	mac := filepath.Join(home, "Library", "Application Support")
	locs := []Location{
		{ClaudeDesktop, filepath.Join(cfg, "Claude", "claude_desktop_config.json")},
		{ClaudeCode, filepath.Join(home, ".claude.json")},
		{ClaudeCode, filepath.Join(cwd, ".mcp.json")},
		{Cursor, filepath.Join(home, ".cursor", "mcp.json")},
		{Cursor, filepath.Join(cwd, ".cursor", "mcp.json")},
		{VSCode, filepath.Join(cwd, ".vscode", "mcp.json")},
		{VSCode, filepath.Join(cfg, "Code", "User", "mcp.json")},
		{Windsurf, filepath.Join(home, ".codeium", "windsurf", "mcp_config.json")},
		{Gemini, filepath.Join(home, ".gemini", "settings.json")},
		{Gemini, filepath.Join(cwd, ".gemini", "settings.json")},
	}
	if runtime.GOOS == "darwin" {
		locs = append(locs,
			Location{ClaudeDesktop, filepath.Join(mac, "Claude", "claude_desktop_config.json")},
			Location{VSCode, filepath.Join(mac, "Code", "User", "mcp.json")})
	}
	return locs
}

// Discover reads every known configuration file that exists.
func Discover(home, cwd string, lookup func(string) (string, bool)) ([]Entry, []string, error) {
	var entries []Entry
	var files []string
	seen := map[string]bool{}
	for _, l := range Locations(home, cwd) {
		abs, _ := filepath.Abs(l.Path)
		if seen[abs] {
			continue
		}
		seen[abs] = true
		if _, err := os.Stat(l.Path); err != nil {
			continue
		}
		es, err := Load(l.Path, l.Host, home, cwd, lookup)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, l.Path)
		entries = append(entries, es...)
	}
	return entries, files, nil
}

// GuessHost names the host of a configuration file from its path.
func GuessHost(path string) string {
	base := filepath.Base(path)
	dir := filepath.Base(filepath.Dir(path))
	switch {
	case base == "claude_desktop_config.json":
		return ClaudeDesktop
	case base == ".claude.json" || base == ".mcp.json":
		return ClaudeCode
	case base == "mcp_config.json":
		return Windsurf
	case base == "settings.json":
		return Gemini
	case base == "mcp.json" && dir == ".cursor":
		return Cursor
	case base == "mcp.json" && (dir == ".vscode" || dir == "User"):
		return VSCode
	}
	return ""
}

// MaxConfigSize bounds a configuration file.
const MaxConfigSize = 16 << 20

// Load reads one configuration file. host may be empty to guess it from
// the file name and content. cwd is the project directory (for Claude
// Code's per-project entries and ${workspaceFolder}).
func Load(path, host, home, cwd string, lookup func(string) (string, bool)) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) > MaxConfigSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxConfigSize)
	}
	v, err := etdi.ParseJSON(StripJSONC(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if v.Kind != etdi.Object {
		return nil, fmt.Errorf("%s: not a JSON object", path)
	}
	if host == "" {
		host = GuessHost(path)
	}
	var servers []*etdi.Value
	if s := v.Get("mcpServers"); s != nil {
		servers = append(servers, s)
	}
	if s := v.Get("servers"); s != nil && (host == VSCode || host == "") {
		servers = append(servers, s)
		if host == "" {
			host = VSCode
		}
	}
	// Claude Code keeps per-project servers under projects[<dir>].
	if p := v.Get("projects"); p != nil && p.Kind == etdi.Object && cwd != "" {
		if abs, err := filepath.Abs(cwd); err == nil {
			if proj := p.Get(abs); proj != nil {
				if s := proj.Get("mcpServers"); s != nil {
					servers = append(servers, s)
				}
			}
		}
	}
	workspace := cwd
	if host == VSCode && filepath.Base(filepath.Dir(path)) == ".vscode" {
		workspace = filepath.Dir(filepath.Dir(path))
	}
	r := resolver{home: home, workspace: workspace, lookup: lookup}
	var out []Entry
	for _, s := range servers {
		if s.Kind != etdi.Object {
			return nil, fmt.Errorf("%s: the server list is a %s, not an object", path, s.Kind)
		}
		for _, m := range s.Members {
			e, err := entry(m.Name, m.Value, host, path, &r)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
	}
	return out, nil
}

func entry(name string, v *etdi.Value, host, file string, r *resolver) (Entry, error) {
	e := Entry{Name: name, Host: host, File: file}
	if v.Kind != etdi.Object {
		return e, fmt.Errorf("%s: server %q is a %s, not an object", file, name, v.Kind)
	}
	str := func(key string) (string, error) {
		f := v.Get(key)
		if f == nil {
			return "", nil
		}
		if f.Kind != etdi.String {
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
	for _, key := range []string{"url", "serverUrl", "httpUrl"} {
		u, err := str(key)
		if err != nil {
			return e, err
		}
		if u != "" && e.URL == "" {
			e.URL = u
		}
	}
	typ, err := str("type")
	if err != nil {
		return e, err
	}
	if a := v.Get("args"); a != nil {
		if a.Kind != etdi.Array {
			return e, fmt.Errorf("%s: server %q: args is a %s, not an array", file, name, a.Kind)
		}
		for i, x := range a.Elems {
			if x.Kind != etdi.String {
				return e, fmt.Errorf("%s: server %q: args[%d] is a %s, not a string", file, name, i, x.Kind)
			}
			e.Args = append(e.Args, r.expand(x.Str, &e.Problems, fmt.Sprintf("args[%d]", i)))
		}
	}
	for _, key := range []string{"env", "headers"} {
		obj := v.Get(key)
		if obj == nil {
			continue
		}
		if obj.Kind != etdi.Object {
			return e, fmt.Errorf("%s: server %q: %s is a %s, not an object", file, name, key, obj.Kind)
		}
		m := map[string]string{}
		for _, mem := range obj.Members {
			if mem.Value.Kind != etdi.String {
				return e, fmt.Errorf("%s: server %q: %s.%s is a %s, not a string", file, name, key, mem.Name, mem.Value.Kind)
			}
			m[mem.Name] = r.expand(mem.Value.Str, &e.Problems, key+"."+mem.Name)
		}
		if key == "env" {
			e.Env = m
			for k := range m {
				e.EnvKeys = append(e.EnvKeys, k)
			}
			sort.Strings(e.EnvKeys)
		} else {
			e.Headers = m
		}
	}
	switch {
	case e.Command != "":
		e.Transport = "stdio"
	case e.URL != "":
		e.Transport = "http"
		if typ == "sse" || (host == Gemini && v.Get("url") != nil && v.Get("httpUrl") == nil) {
			e.Transport = "sse"
			e.Problems = append(e.Problems, "uses the deprecated SSE transport, which etdi does not speak; use Streamable HTTP")
		}
	default:
		e.Problems = append(e.Problems, "has neither a command nor a URL")
	}
	return e, nil
}

type resolver struct {
	home, workspace string
	lookup          func(string) (string, bool)
}

var varRE = regexp.MustCompile(`\$\{([^}]*)\}`)

// expand resolves variables in s; unresolvable ones become problems and
// stay as written.
func (r *resolver) expand(s string, problems *[]string, where string) string {
	return varRE.ReplaceAllStringFunc(s, func(m string) string {
		inner := m[2 : len(m)-1]
		switch {
		case strings.HasPrefix(inner, "input:"):
			*problems = append(*problems, fmt.Sprintf("%s uses %s, which the host asks for at launch; etdi does not guess it", where, m))
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
		if v, ok := r.lookup(name); ok && v != "" {
			return v
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

// StripJSONC removes // and /* */ comments outside strings and commas
// before a closing bracket, turning VS Code's JSON with comments into JSON.
func StripJSONC(data []byte) []byte {
	out := make([]byte, 0, len(data))
	inStr, esc := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			out = append(out, c)
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
			out = append(out, c)
		case c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			if i < len(data) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			i += 2
			for i+1 < len(data) && !(data[i] == '*' && data[i+1] == '/') {
				i++
			}
			i++
			out = append(out, ' ')
		case c == '}' || c == ']':
			// Drop a trailing comma (and the whitespace after it).
			j := len(out) - 1
			for j >= 0 && (out[j] == ' ' || out[j] == '\t' || out[j] == '\n' || out[j] == '\r') {
				j--
			}
			if j >= 0 && out[j] == ',' {
				out = append(out[:j], out[j+1:]...)
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}

// ErrNoConfig is returned when no configuration file is found.
var ErrNoConfig = errors.New("no MCP host configuration found")
