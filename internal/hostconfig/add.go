package hostconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// NewEntry is a server entry to add to a host configuration: a command
// (stdio) or a URL (a remote server), never both.
type NewEntry struct {
	Command string
	Args    []string
	Env     map[string]string
	// URL and Transport ("http" or "sse") name a remote server, Headers
	// the headers the host sends it.
	URL       string
	Transport string
	Headers   map[string]string
}

// entryName is what AddEntry accepts as an entry's name: what people type
// and every host's format can hold as a key without quoting surprises.
var entryName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`) })

// ErrEntryExists is returned by AddEntry when the file already has an
// entry of that name.
type ErrEntryExists struct{ Name, Path string }

func (e *ErrEntryExists) Error() string {
	return fmt.Sprintf("%s already has a server entry named %q", e.Path, e.Name)
}

// AddEntry returns data, the configuration file path of host, with the
// server entry name added where the host reads its servers (mcpServers,
// VS Code's servers or mcp.servers, Zed's context_servers, Codex's
// mcp_servers table). Everything already in the file stays byte for byte:
// the entry is inserted, the file is not reformatted. Empty data is a new
// file. An entry of the same name is never replaced ([ErrEntryExists]).
// The result is read back as [Load] reads it, and must hold the entry as
// given.
func AddEntry(path string, data []byte, host, name string, e NewEntry) ([]byte, error) {
	if !entryName().MatchString(name) {
		return nil, fmt.Errorf("entry name %q: use letters, digits, '.', '_' and '-' (at most 128)", name)
	}
	if (e.Command == "") == (e.URL == "") {
		return nil, fmt.Errorf("an entry has a command or a URL, not both or neither")
	}
	if host == "" {
		host = GuessHost(path)
	}
	var out []byte
	var err error
	if host == Codex || strings.HasSuffix(path, ".toml") {
		out, err = addTOML(data, name, e)
	} else {
		out, err = addJSON(path, data, host, name, e)
	}
	if err != nil {
		return nil, err
	}
	if err := checkAdded(path, out, host, name, e); err != nil {
		return nil, err
	}
	return out, nil
}

// listPath is where host keeps its servers in a file at path.
func listPath(path, host string) []string {
	switch {
	case host == VSCode && strings.HasSuffix(path, "settings.json"):
		return []string{"mcp", "servers"}
	case host == VSCode:
		return []string{"servers"}
	case host == Zed:
		return []string{"context_servers"}
	}
	return []string{"mcpServers"}
}

// newEntryJSON is the entry as host writes it, indented for a list at depth.
func newEntryJSON(host string, e NewEntry, indent string) ([]byte, error) {
	var m []member
	if e.Command != "" {
		if host == VSCode {
			m = append(m, member{"type", "stdio"})
		}
		m = append(m, member{"command", e.Command})
		if e.Args == nil {
			e.Args = []string{}
		}
		m = append(m, member{"args", e.Args})
		if len(e.Env) > 0 {
			m = append(m, member{"env", e.Env})
		}
	} else {
		t := e.Transport
		if t == "" {
			t = "http"
		}
		if host == Cline && t == "http" {
			t = "streamableHttp"
		}
		m = append(m, member{"type", t}, member{"url", e.URL})
		if len(e.Headers) > 0 {
			m = append(m, member{"headers", e.Headers})
		}
	}
	var b bytes.Buffer
	b.WriteString("{")
	for i, x := range m {
		if i > 0 {
			b.WriteString(",")
		}
		v, err := json.MarshalIndent(x.value, indent+"  ", "  ")
		if err != nil {
			return nil, err
		}
		k, _ := json.Marshal(x.name)
		fmt.Fprintf(&b, "\n%s  %s: %s", indent, k, v)
	}
	fmt.Fprintf(&b, "\n%s}", indent)
	return b.Bytes(), nil
}

type member struct {
	name  string
	value any
}

func addJSON(path string, data []byte, host, name string, e NewEntry) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}\n")
	}
	root, err := ParseJSONC(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if root.Kind != '{' {
		return nil, fmt.Errorf("%s: not a JSON object", path)
	}
	lp := listPath(path, host)
	// Walk down as far as the file goes; create the rest.
	n := root
	depth := 0
	for _, k := range lp {
		next := n.Get(k)
		if next == nil {
			break
		}
		if next.Kind != '{' {
			return nil, fmt.Errorf("%s: %s is not an object", path, strings.Join(lp[:depth+1], "."))
		}
		n = next
		depth++
	}
	if depth == len(lp) && n.Get(name) != nil {
		return nil, &ErrEntryExists{Name: name, Path: path}
	}
	// The entry's closing brace lines up with its name, one level below
	// the server list.
	ej, err := newEntryJSON(host, e, strings.Repeat("  ", len(lp)+1))
	if err != nil {
		return nil, err
	}
	// What is inserted into n: the missing objects around the entry.
	k, _ := json.Marshal(name)
	text := fmt.Sprintf("%s: %s", k, ej)
	for i := len(lp) - 1; i >= depth; i-- {
		in := strings.Repeat("  ", i+1)
		kk, _ := json.Marshal(lp[i])
		text = fmt.Sprintf("%s: {\n%s  %s\n%s}", kk, in, text, in)
	}
	in := strings.Repeat("  ", depth+1)
	closing := n.End - 1 // the object's '}'
	// Insert after the last member (a trailing comma is kept as it is),
	// or right after '{' in an empty object.
	var edit Edit
	if len(n.Members) == 0 {
		edit = Edit{Start: n.Start + 1, End: n.Start + 1, Text: "\n" + in + text + "\n" + strings.Repeat("  ", depth)}
		if !onlySpace(data[n.Start+1 : closing]) {
			// Comments in an empty object: keep them, add before '}'.
			edit = Edit{Start: closing, End: closing, Text: "\n" + in + text + "\n" + strings.Repeat("  ", depth)}
		}
	} else {
		last := n.Members[len(n.Members)-1].Value.End
		sep := ","
		if i := nextNonSpace(data, last); i < len(data) && data[i] == ',' {
			last, sep = i+1, ""
		}
		edit = Edit{Start: last, End: last, Text: sep + "\n" + in + text}
	}
	return ApplyEdits(data, []Edit{edit})
}

func onlySpace(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

// nextNonSpace is the offset of the first byte at or after i that is not
// white space (comments are not skipped: a comma after a comment is left
// alone and a new one written).
func nextNonSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func addTOML(data []byte, name string, e NewEntry) ([]byte, error) {
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return nil, err
	}
	if ms, ok := doc["mcp_servers"].(map[string]any); ok {
		if _, ok := ms[name]; ok {
			return nil, &ErrEntryExists{Name: name}
		}
	}
	if e.URL != "" {
		return nil, fmt.Errorf("a remote server entry for Codex CLI: add it by hand, then run etdi wrap")
	}
	var b bytes.Buffer
	b.Write(data)
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		b.WriteString("\n")
	}
	if len(data) > 0 {
		b.WriteString("\n")
	}
	// Written by hand, not by the encoder: an encoder writes the
	// [mcp_servers] header again, which a file that has it already
	// cannot take.
	key := tomlString(name)
	fmt.Fprintf(&b, "[mcp_servers.%s]\ncommand = %s\nargs = [", key, tomlString(e.Command))
	for i, a := range e.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(tomlString(a))
	}
	b.WriteString("]\n")
	if len(e.Env) > 0 {
		keys := make([]string, 0, len(e.Env))
		for k := range e.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "\n[mcp_servers.%s.env]\n", key)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s = %s\n", tomlString(k), tomlString(e.Env[k]))
		}
	}
	return b.Bytes(), nil
}

// tomlString is s as a TOML basic string: JSON's escapes are TOML's
// (\uXXXX included), and no HTML escaping is wanted.
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// checkAdded reads the new file as a host would and requires the entry to
// be there as given.
func checkAdded(path string, data []byte, host, name string, e NewEntry) error {
	got, err := loadData(path, data, host, Options{})
	if err != nil {
		return fmt.Errorf("the new entry would make %s unreadable: %w", path, err)
	}
	for _, g := range got {
		if g.Name != name {
			continue
		}
		if e.Command != "" {
			if g.Command != e.Command || strings.Join(g.Args, "\x00") != strings.Join(e.Args, "\x00") {
				return fmt.Errorf("the new entry %q would be read as another command", name)
			}
			for k, v := range e.Env {
				if g.Env[k] != v {
					return fmt.Errorf("the new entry %q would be read with another environment", name)
				}
			}
			return nil
		}
		if g.URL != e.URL {
			return fmt.Errorf("the new entry %q would be read with another URL", name)
		}
		return nil
	}
	return fmt.Errorf("the new entry %q is not read back from %s", name, path)
}
