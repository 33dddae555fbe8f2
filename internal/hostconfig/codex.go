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
		e := Entry{Name: name, Host: Codex, File: path, Line: codexLine(data, name)}
		if raw, err := json.Marshal(t); err == nil {
			e.Launch = launchDigest(path, name, raw)
		}
		if enabled, ok := t["enabled"].(bool); ok && !enabled {
			e.Disabled, e.HostHonoursDisabled = true, row.DisabledFact("enabled = false")
			if e.NotStarted() {
				out = append(out, e) // the host does not start it; neither does etdi
				continue
			}
		}
		str := func(key string) (string, error) {
			v, ok := t[key]
			if !ok {
				return "", nil
			}
			s, ok := v.(string)
			if !ok {
				return "", fmt.Errorf("%s: mcp_servers.%s.%s is not a string", path, name, key)
			}
			return s, nil
		}
		strMap := func(key string) (map[string]string, error) {
			v, ok := t[key]
			if !ok {
				return nil, nil
			}
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: mcp_servers.%s.%s is not a table", path, name, key)
			}
			out := map[string]string{}
			for k, x := range m {
				s, ok := x.(string)
				if !ok {
					return nil, fmt.Errorf("%s: mcp_servers.%s.%s.%s is not a string", path, name, key, k)
				}
				out[k] = s
			}
			return out, nil
		}
		var err error
		if e.Command, err = str("command"); err != nil {
			return nil, err
		}
		if e.Cwd, err = str("cwd"); err != nil {
			return nil, err
		}
		if e.URL, err = str("url"); err != nil {
			return nil, err
		}
		if a, ok := t["args"]; ok {
			list, ok := a.([]any)
			if !ok {
				return nil, fmt.Errorf("%s: mcp_servers.%s.args is not an array", path, name)
			}
			for i, x := range list {
				s, ok := x.(string)
				if !ok {
					return nil, fmt.Errorf("%s: mcp_servers.%s.args[%d] is not a string", path, name, i)
				}
				e.Args = append(e.Args, s)
			}
		}
		env, err := strMap("env")
		if err != nil {
			return nil, err
		}
		if env != nil {
			e.setEnv(env)
		}
		headers, err := strMap("http_headers")
		if err != nil {
			return nil, err
		}
		fromEnv, err := strMap("env_http_headers")
		if err != nil {
			return nil, err
		}
		bearer, err := str("bearer_token_env_var")
		if err != nil {
			return nil, err
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
		out = append(out, e)
	}
	return out, nil
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
