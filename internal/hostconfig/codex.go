package hostconfig

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"

	"github.com/BurntSushi/toml"
)

// loadCodex reads Codex CLI's config.toml: each [mcp_servers.NAME] table
// has command, args, env and cwd for a stdio server, or url with
// http_headers, env_http_headers (header name to environment variable) and
// bearer_token_env_var for a Streamable HTTP one. Codex does not expand
// ${...} in these values, so neither does etdi. The TOML decoder refuses
// duplicate keys and tables, as the TOML specification requires.
func loadCodex(path string, data []byte, o Options) ([]Entry, error) {
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		if pe, ok := err.(toml.ParseError); ok {
			return nil, fmt.Errorf("%s:%d:%d: invalid TOML: %s", path, pe.Position.Line, pe.Position.Col, pe.Message)
		}
		return nil, fmt.Errorf("%s: invalid TOML: %v", path, err)
	}
	raw, ok := doc["mcp_servers"]
	if !ok {
		return nil, nil
	}
	servers, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: mcp_servers is not a table", path)
	}
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Entry
	row := LaunchOf(Codex)
	project := ProjectDir(path, o.Cwd)
	for _, name := range names {
		t, ok := servers[name].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: mcp_servers.%s is not a table", path, name)
		}
		e, err := codexEntry(data, codexTable{path, name, t}, o, row, project)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// codexTable is the [mcp_servers.NAME] table of a Codex configuration.
type codexTable struct {
	path, name string
	t          map[string]any
}

// str returns the string member key ("" when absent).
func (c codexTable) str(key string) (string, error) {
	v, ok := c.t[key]
	if !ok {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: mcp_servers.%s.%s is not a string", c.path, c.name, key)
	}
	return s, nil
}

// strMap returns the table of strings key (nil when absent).
func (c codexTable) strMap(key string) (map[string]string, error) {
	v, ok := c.t[key]
	if !ok {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: mcp_servers.%s.%s is not a table", c.path, c.name, key)
	}
	out := map[string]string{}
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%s: mcp_servers.%s.%s.%s is not a string", c.path, c.name, key, k)
		}
		out[k] = s
	}
	return out, nil
}

// args returns the array of strings args (nil when absent).
func (c codexTable) args() ([]string, error) {
	a, ok := c.t["args"]
	if !ok {
		return nil, nil
	}
	list, ok := a.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: mcp_servers.%s.args is not an array", c.path, c.name)
	}
	var out []string
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%s: mcp_servers.%s.args[%d] is not a string", c.path, c.name, i)
		}
		out = append(out, s)
	}
	return out, nil
}

// codexEntry reads the server entry c of the Codex configuration data
// (row is Codex's launch row, project the project directory).
func codexEntry(data []byte, c codexTable, o Options, row *Launch, project string) (Entry, error) {
	path, name, t := c.path, c.name, c.t
	e := Entry{Name: name, Host: Codex, File: path, Line: codexLine(data, name)}
	if raw, err := json.Marshal(t); err == nil {
		e.Launch = launchDigest(path, name, raw)
	}
	if enabled, ok := t["enabled"].(bool); ok && !enabled {
		e.Disabled, e.HostHonoursDisabled = true, row.DisabledFact("enabled = false")
		if e.NotStarted() {
			return e, nil // the host does not start it; neither does etdi
		}
	}
	var err error
	if e.Command, err = c.str("command"); err != nil {
		return e, err
	}
	if e.Cwd, err = c.str("cwd"); err != nil {
		return e, err
	}
	if e.URL, err = c.str("url"); err != nil {
		return e, err
	}
	if e.Args, err = c.args(); err != nil {
		return e, err
	}
	env, err := c.strMap("env")
	if err != nil {
		return e, err
	}
	if env != nil {
		e.setEnv(env)
	}
	if err := codexHeaders(&e, c, o); err != nil {
		return e, err
	}
	_, hasCommand := t["command"]
	m := members{command: hasCommand}
	if _, ok := t["url"]; ok {
		m.urls = []string{"url"}
	}
	e.apply(row.decide(m), map[string]string{"url": e.URL})
	if e.Transport == "stdio" {
		e.lookThrough(o.Lookup, &o.Gate, o.Cwd, nil)
		e.wrappedTransport()
		e.resolveProgram(row, project, o.Lookup)
	}
	return e, nil
}

// codexHeaders sets the headers of e: http_headers, those whose values
// come from the environment (env_http_headers), and the bearer token of
// bearer_token_env_var; a variable that is not set is a problem of e.
func codexHeaders(e *Entry, c codexTable, o Options) error {
	headers, err := c.strMap("http_headers")
	if err != nil {
		return err
	}
	fromEnv, err := c.strMap("env_http_headers")
	if err != nil {
		return err
	}
	bearer, err := c.str("bearer_token_env_var")
	if err != nil {
		return err
	}
	for h, variable := range fromEnv {
		if v := o.getenv(variable); v != "" {
			if headers == nil {
				headers = map[string]string{}
			}
			headers[h] = v
		} else {
			e.Problems = append(e.Problems, fmt.Sprintf("header %s comes from environment variable %s, which is not set", h, variable))
		}
	}
	if bearer != "" {
		if v := o.getenv(bearer); v != "" {
			if headers == nil {
				headers = map[string]string{}
			}
			headers["Authorization"] = "Bearer " + v
		} else {
			e.Problems = append(e.Problems, fmt.Sprintf("bearer_token_env_var names %s, which is not set", bearer))
		}
	}
	e.Headers = headers
	return nil
}

// codexLine returns the line of the [mcp_servers.NAME] header (0 if not
// found).
func codexLine(data []byte, name string) int {
	re := regexp.MustCompile(`(?m)^[ \t]*\[[ \t]*mcp_servers[ \t]*\.[ \t]*(` + regexp.QuoteMeta(name) + `|"` + regexp.QuoteMeta(name) + `")\s*\]`)
	loc := re.FindIndex(data)
	if loc == nil {
		return 0
	}
	line, _ := LineCol(data, loc[0])
	return line
}
