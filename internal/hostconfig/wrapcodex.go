package hostconfig

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// codexTableSpan returns the span of the [mcp_servers.NAME] table: from
// the start of its header line to the start of the next table header (or
// the end of the file).
func codexTableSpan(data []byte, name string) (start, end int, ok bool) {
	re := regexp.MustCompile(`(?m)^[ \t]*\[[ \t]*mcp_servers[ \t]*\.[ \t]*(` + regexp.QuoteMeta(name) + `|"` + regexp.QuoteMeta(name) + `")[ \t]*\][ \t]*(#[^\r\n]*)?\r?$`)
	locs := re.FindAllIndex(data, -1)
	if len(locs) != 1 {
		return 0, 0, false
	}
	start = locs[0][0]
	end = len(data)
	next := regexp.MustCompile(`(?m)^[ \t]*\[`).FindIndex(data[locs[0][1]:])
	if next != nil {
		end = locs[0][1] + next[0]
	}
	return start, end, true
}

var codexKeyRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^[ \t]*(command|args|url|http_headers|env_http_headers|bearer_token_env_var)[ \t]*=[ \t]*`)
})

// tomlKey is one `key = value` line of a table: the key's start and the
// value's span.
type tomlKey struct {
	keyStart, start, end int
	elems                [][2]int // an array's string elements
}

func wrapCodex(data []byte, o WrapOptions, res *Result) ([]entryEdit, error) {
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return nil, fmt.Errorf("invalid TOML: %v", err)
	}
	servers, _ := doc["mcp_servers"].(map[string]any)
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	var eds []entryEdit
	for _, name := range names {
		if o.Name != "" && name != o.Name {
			continue
		}
		t, _ := servers[name].(map[string]any)
		ed, status, reason := wrapCodexEntry(data, name, t, o)
		res.Outcomes = append(res.Outcomes, Outcome{name, status, reason})
		if status == StatusWrapped {
			eds = append(eds, ed)
		}
	}
	return eds, nil
}

func wrapCodexEntry(data []byte, name string, t map[string]any, o WrapOptions) (entryEdit, string, string) {
	etdiPath := o.Etdi
	ed := entryEdit{path: []string{"mcp_servers", name}}
	no := func(format string, a ...any) (entryEdit, string, string) {
		return ed, StatusRefused, fmt.Sprintf(format, a...)
	}
	l := LaunchOf(Codex)
	if enabled, ok := t["enabled"].(bool); ok && !enabled && l.DisabledFact("enabled = false") == Yes {
		return ed, StatusDisabled, fmt.Sprintf("%s does not start it (enabled = false)", l.Name)
	}
	_, hasCommand := t["command"]
	m := members{command: hasCommand}
	if _, ok := t["url"]; ok {
		m.urls = []string{"url"}
	}
	if d := l.decide(m); d.ambiguous != "" {
		return no("%s: entry %q is ambiguous for %s: %s; keep either command or url", o.file, name, l.Name, d.ambiguous)
	}
	if cmd, ok := t["command"].(string); ok {
		var args []string
		list, _ := t["args"].([]any)
		for _, a := range list {
			s, _ := a.(string)
			args = append(args, s)
		}
		if status, reason, ok := o.alreadyWrapped(name, cmd, args); ok {
			return ed, status, reason
		}
	}
	start, end, ok := codexTableSpan(data, name)
	if !ok {
		return no("it is not written as one [mcp_servers.%s] table; etdi edits only that form", name)
	}
	ed.start, ed.end = start, end
	body := data[start:end]
	if bytes.Contains(body, []byte(`"""`)) || bytes.Contains(body, []byte(`'''`)) {
		return no("its table holds a multi-line string, which etdi does not edit")
	}
	keys, why := codexKeys(body, start)
	if why != "" {
		return no("%s", why)
	}
	// Every key the decoder saw must be one found here.
	for _, k := range []string{"command", "args", "url"} {
		if _, inDoc := t[k]; inDoc {
			if _, here := keys[k]; !here {
				return no("its %s is not written as `%s = ...` in its table", k, k)
			}
		}
	}
	if strings.Contains(name, "${") {
		return no("its name %q holds a ${...} placeholder", name)
	}
	nl := "\n"
	if bytes.Contains(body, []byte("\r\n")) {
		nl = "\r\n"
	}
	if c, ok := keys["command"]; ok {
		ed.edits = wrapCodexCommand(data, name, c, keys, end, nl, o)
		return ed, StatusWrapped, ""
	}
	u, ok := keys["url"]
	if !ok {
		return ed, StatusSkipped, "it has neither a command nor a url"
	}
	for _, k := range []string{"http_headers", "env_http_headers", "bearer_token_env_var"} {
		if _, ok := t[k]; ok {
			return no("it sends headers (%s), which etdi does not move into a Codex entry yet; wrap it by hand with etdi run --url", k)
		}
	}
	if _, ok := keys["args"]; ok {
		return no("it has args next to its url")
	}
	list := "[" + runArgs(name, o) + `, "--url", ` + string(data[u.start:u.end]) + "]"
	ed.edits = append(ed.edits, Edit{u.keyStart, u.end, "command = " + jsonString(etdiPath) + nl + "args = " + list})
	return ed, StatusWrapped, ""
}

// codexKeys returns the keys etdi edits (codexKeyRE) of the table body
// that starts at offset start of the file, with their spans in the file;
// why, when not empty, says why the table cannot be edited.
func codexKeys(body []byte, start int) (map[string]tomlKey, string) {
	keys := map[string]tomlKey{}
	for _, m := range codexKeyRE().FindAllSubmatchIndex(body, -1) {
		k := string(body[m[2]:m[3]])
		if _, dup := keys[k]; dup {
			return nil, fmt.Sprintf("key %s appears twice", k)
		}
		endv, elems, err := scanTOMLValue(body, m[1])
		if err != nil {
			return nil, fmt.Sprintf("%s: %v", k, err)
		}
		keys[k] = tomlKey{start + m[0], start + m[1], start + endv, shift(elems, start)}
	}
	return keys, ""
}

// wrapCodexCommand returns the edits that make the command c of a table
// (which ends at end, and whose lines end with nl) start etdi run: etdi
// run's arguments go in front of the server's own, in its args or in an
// args line added after the command's.
func wrapCodexCommand(data []byte, name string, c tomlKey, keys map[string]tomlKey, end int, nl string, o WrapOptions) []Edit {
	head := runArgs(name, o) + `, "--", ` + string(data[c.start:c.end])
	edits := []Edit{{c.start, c.end, jsonString(o.Etdi)}}
	if a, ok := keys["args"]; ok {
		if len(a.elems) > 0 {
			head += sep(data, a.start+1)
		}
		return append(edits, Edit{a.start + 1, a.start + 1, head})
	}
	list := "[" + head + "]"
	// After the command's line, comment included.
	eol := c.end
	for eol < end && data[eol] != '\n' {
		eol++
	}
	if eol > c.end && data[eol-1] == '\r' {
		eol--
	}
	return append(edits, Edit{eol, eol, nl + "args = " + list})
}

func shift(spans [][2]int, by int) [][2]int {
	out := make([][2]int, len(spans))
	for i, s := range spans {
		out[i] = [2]int{s[0] + by, s[1] + by}
	}
	return out
}

// scanTOMLValue returns the end of the string or array of strings that
// starts at pos, and an array's element spans. Other values, and
// multi-line strings, are refused.
func scanTOMLValue(b []byte, pos int) (int, [][2]int, error) {
	if pos >= len(b) {
		return 0, nil, fmt.Errorf("no value")
	}
	switch b[pos] {
	case '"', '\'':
		end, err := scanTOMLString(b, pos)
		return end, nil, err
	case '[':
		var elems [][2]int
		i := pos + 1
		for {
			i = skipTOMLSpace(b, i)
			if i >= len(b) {
				return 0, nil, fmt.Errorf("unterminated array")
			}
			if b[i] == ']' {
				return i + 1, elems, nil
			}
			end, err := scanTOMLString(b, i)
			if err != nil {
				return 0, nil, err
			}
			elems = append(elems, [2]int{i, end})
			i = skipTOMLSpace(b, end)
			if i < len(b) && b[i] == ',' {
				i++
				continue
			}
			if i < len(b) && b[i] == ']' {
				continue
			}
			return 0, nil, fmt.Errorf("expected ',' or ']' in the array")
		}
	}
	return 0, nil, fmt.Errorf("not a string or an array of strings")
}

func skipTOMLSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		case '#':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		default:
			return i
		}
	}
	return i
}

func scanTOMLString(b []byte, pos int) (int, error) {
	if pos >= len(b) || (b[pos] != '"' && b[pos] != '\'') {
		return 0, fmt.Errorf("not a string")
	}
	q := b[pos]
	for i := pos + 1; i < len(b); i++ {
		switch {
		case b[i] == '\n':
			return 0, fmt.Errorf("string not closed on its line")
		case q == '"' && b[i] == '\\':
			i++
		case b[i] == q:
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated string")
}
