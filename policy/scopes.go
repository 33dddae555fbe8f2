package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/strictjson"
)

// ScopesFormat is the value of a scopes overlay's "etdiScopes" member.
const ScopesFormat = 1

// Bounds of a scopes overlay.
const (
	// MaxScopesFile bounds the size of an overlay file.
	MaxScopesFile = 1 << 20
	// MaxScopesEntries bounds its "server/tool" entries.
	MaxScopesEntries = 10_000
)

// ScopesOverlay is a reviewed file of the permission scopes a person
// gives the tools of unsigned servers at approval (docs/storage.md#scopes-of-unsigned-tools): strict
// JSON of the form
//
//	{"etdiScopes": 1, "comment": "...",
//	 "tools": {"filesystem/write_file": ["files:write"], ...}}
//
// Each key is "SERVER/TOOL", SERVER the server's name as the host
// configuration names it, split at the last '/'.
type ScopesOverlay struct {
	// Name is the file's name, for messages.
	Name string
	// tools holds the scopes by server name and tool name, normalized
	// (pin.NormalizeScopes).
	tools map[string]map[string][]string
}

// LoadScopes reads and parses a scopes overlay file.
func LoadScopes(path string) (*ScopesOverlay, error) {
	data, err := readBoundedLimit(path, MaxScopesFile)
	if err != nil {
		return nil, err
	}
	return ParseScopes(path, data)
}

// ParseScopes parses a scopes overlay. It is strict: JSON of etdi's
// profile (no member twice, valid UTF-8), no member it does not know,
// "etdiScopes" 1, every key a valid "SERVER/TOOL" once, every scope valid
// ([etdi.ValidateScope], at most [pin.MaxScopes] a tool).
func ParseScopes(name string, data []byte) (*ScopesOverlay, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("scopes overlay %s: %s", termtext.Escape(name), fmt.Sprintf(format, a...))
	}
	if len(data) > MaxScopesFile {
		return nil, fail("larger than %d bytes", MaxScopesFile)
	}
	v, err := strictjson.Parse(data)
	if err != nil {
		return nil, fail("%v", err)
	}
	if v.Kind != strictjson.Object {
		return nil, fail(`not a JSON object; write {"etdiScopes": 1, "tools": {"SERVER/TOOL": ["SCOPE", ...]}}`)
	}
	ov := &ScopesOverlay{Name: name, tools: map[string]map[string][]string{}}
	var format, tools *strictjson.Value
	for _, m := range v.Members {
		switch m.Name {
		case "etdiScopes":
			format = m.Value
		case "tools":
			tools = m.Value
		case "comment":
			if m.Value.Kind != strictjson.String {
				return nil, fail(`"comment" is not a string`)
			}
		default:
			return nil, fail("unknown member %q (known: etdiScopes, tools, comment)", termtext.Escape(clip(m.Name)))
		}
	}
	if format == nil || format.Kind != strictjson.Number || format.Num != ScopesFormat {
		return nil, fail(`"etdiScopes" must be %d`, ScopesFormat)
	}
	if tools == nil || tools.Kind != strictjson.Object {
		return nil, fail(`"tools" must be an object of "SERVER/TOOL": ["SCOPE", ...]`)
	}
	if len(tools.Members) > MaxScopesEntries {
		return nil, fail("more than %d entries", MaxScopesEntries)
	}
	for _, m := range tools.Members {
		key := termtext.Escape(clip(m.Name))
		server, tool, scopes, msg := parseScopesEntry(m)
		if msg != "" {
			return nil, fail("%q%s", key, msg)
		}
		if ov.tools[server] == nil {
			ov.tools[server] = map[string][]string{}
		}
		if _, dup := ov.tools[server][tool]; dup {
			return nil, fail("%q is given twice", key)
		}
		ov.tools[server][tool] = scopes
	}
	return ov, nil
}

// parseScopesEntry reads one "SERVER/TOOL": ["SCOPE", ...] member of an
// overlay's tools, its scopes normalized; msg, when not empty, is what is
// wrong with it, to follow the member's name.
func parseScopesEntry(m strictjson.Member) (server, tool string, scopes []string, msg string) {
	i := strings.LastIndexByte(m.Name, '/')
	if i <= 0 || i == len(m.Name)-1 {
		return "", "", nil, " is not SERVER/TOOL"
	}
	server, tool = m.Name[:i], m.Name[i+1:]
	if err := pin.ValidateUnsignedName(server); err != nil {
		return "", "", nil, fmt.Sprintf(": %v", err)
	}
	if err := etdi.ValidateToolName(tool); err != nil {
		return "", "", nil, fmt.Sprintf(": %v", err)
	}
	if m.Value.Kind != strictjson.Array {
		return "", "", nil, ": the scopes must be an array of strings"
	}
	var ss []string
	for _, e := range m.Value.Elems {
		if e.Kind != strictjson.String {
			return "", "", nil, ": the scopes must be an array of strings"
		}
		ss = append(ss, e.Str)
	}
	norm, err := pin.NormalizeScopes(ss)
	if err != nil {
		return "", "", nil, ": " + termtext.Escape(err.Error())
	}
	return server, tool, norm, ""
}

// Servers are the server names the overlay gives scopes to, sorted.
func (ov *ScopesOverlay) Servers() []string {
	out := make([]string, 0, len(ov.tools))
	for s := range ov.tools {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// For returns the scopes the overlay gives the tools of the server o
// observes, by tool name. The overlay must name the server (by its name
// as configured), and only tools it offers: anything else is an error (a
// misspelt name would otherwise give no scopes and lift every rule that
// reads them).
func (ov *ScopesOverlay) For(o *pin.Observation) (map[string][]string, error) {
	tools, ok := ov.tools[o.Name]
	if !ok {
		return nil, fmt.Errorf("scopes overlay %s names no tool of server %q (it names servers %s): "+
			"its keys are \"SERVER/TOOL\" with the server's name as the host configuration names it",
			termtext.Escape(ov.Name), termtext.Escape(o.Name), termtext.Escape(strings.Join(ov.Servers(), ", ")))
	}
	out := map[string][]string{}
	var unknown []string
	for name, ss := range tools {
		if !slices.ContainsFunc(o.Tools, func(t pin.Observed) bool { return t.Item == pin.ItemTool && t.Name == name }) {
			unknown = append(unknown, name)
			continue
		}
		out[name] = ss
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("scopes overlay %s names tools that server %q does not offer: %s (etdi check lists its tools)",
			termtext.Escape(ov.Name), termtext.Escape(o.Name), termtext.Escape(strings.Join(unknown, ", ")))
	}
	return out, nil
}

// ApprovalScopes are the scopes an approval of the server o observes
// gives its tools ([pin.ApproveOptions] Scopes and ScopesAll), from an
// overlay (nil for none) and the scopes given on the command line
// (flags): with tools named (named), flags go to each named tool,
// otherwise to every tool approved; a tool the overlay names has its
// overlay scopes and the flags'.
func ApprovalScopes(o *pin.Observation, ov *ScopesOverlay, named, flags []string) (map[string][]string, []string, error) {
	given := map[string][]string{}
	if ov != nil {
		m, err := ov.For(o)
		if err != nil {
			return nil, nil, err
		}
		given = m
	}
	var all []string
	if len(flags) > 0 {
		if len(named) == 0 {
			all = slices.Clone(flags)
			for name := range given {
				given[name] = append(slices.Clone(given[name]), flags...)
			}
		} else {
			for _, name := range named {
				given[name] = append(slices.Clone(given[name]), flags...)
			}
		}
	}
	if len(given) == 0 {
		given = nil
	}
	return given, all, nil
}
