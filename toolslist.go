package etdi

import (
	"fmt"
	"strconv"
	"strings"
)

// LiveTool is one tool as a server lists it in tools/list.
type LiveTool struct {
	Name string
	// Canonical is the RFC 8785 form of the tool object as received,
	// after StripMeta; Digest is its SHA-256.
	Canonical []byte
	Digest    Digest
}

// Definition parses the stored definition; used to show differences.
func (t *LiveTool) Definition() *Value { return mustParseCanonical(t.Canonical) }

// ToolsList is a parsed tools/list result.
type ToolsList struct {
	Tools []LiveTool
	// Meta is the result's _meta object, if any (may carry an in-band
	// bundle).
	Meta *Value
	// ToolMetas are the _meta objects of the tools that have one, as
	// received (they may carry an in-band bundle too).
	ToolMetas []*Value
	// NextCursor is the result's nextCursor member as received, or nil.
	NextCursor *Value
	// Nodes is the number of JSON values of the document (at most
	// MaxNodes), so that a caller reading many pages can bound their sum.
	Nodes int
}

// ParseToolsList parses a saved tools/list response (SPEC.md §8). Three
// shapes are accepted: the result object {"tools": [...]}, a whole JSON-RPC
// response {"jsonrpc": "2.0", "id": ..., "result": {"tools": [...]}}, or a
// bare array of tool objects. Each tool must be an object with a string
// name. Duplicate names are kept; package verify reports them.
func ParseToolsList(data []byte) (*ToolsList, error) {
	return ParseToolsListPage(data, 0, 0)
}

// A List is one of the lists of a server whose entries reach the model
// (SPEC.md §8, docs/live.md#live-servers): the method that pages through it, the member of its
// result that holds the entries, the member that names each entry (its
// key, unique in the list) and a bound on the key's length.
type List struct {
	Method, Member, Key string
	MaxKey              int
}

// The lists a server offers: tools, prompts, resources, resource templates.
var (
	ListTools     = List{"tools/list", "tools", "name", MaxNameLen}
	ListPrompts   = List{"prompts/list", "prompts", "name", MaxNameLen}
	ListResources = List{"resources/list", "resources", "uri", MaxURILen}
	ListTemplates = List{"resources/templates/list", "resourceTemplates", "uriTemplate", MaxURILen}
)

// MaxURILen bounds the URI of a resource and the URI template of a
// resource template.
const MaxURILen = 4096

// ParseToolsListPage parses one page of a listing of several pages, as
// ParseToolsList does, counting its JSON values against a bound of the
// whole listing: before values were in earlier pages, and all pages
// together may hold at most limit (at most MaxNodes; 0 means MaxNodes and
// no earlier pages). The bound holds while the page is parsed.
func ParseToolsListPage(data []byte, before, limit int) (*ToolsList, error) {
	return ParseListPage(data, ListTools, before, limit)
}

// ParseListPage parses one page of any List as ParseToolsListPage parses
// a tools/list page: the entries are in ToolsList.Tools, each named by
// its key (Name holds a resource's URI), canonical and digested like a
// tool definition (SPEC.md §3).
func ParseListPage(data []byte, list List, before, limit int) (*ToolsList, error) {
	pages, err := ParseListsPage(data, []List{list}, before, limit)
	if err != nil {
		return nil, err
	}
	return pages[0], nil
}

// ParseListResult parses the result of one page of a list as a server
// answers it (MCP): an object whose member list.Member is the array of
// entries, read exactly as a host reads it. Unlike ParseListPage it takes
// no other shape: a result that is a bare array, or that holds its entries
// under "result" as a saved JSON-RPC response does, would be read one way
// here and another way by the host. Any member whose name differs from
// list.Member only in case is refused: a decoder that matches names
// case-insensitively (encoding/json) would read it instead.
func ParseListResult(data []byte, list List, before, limit int) (*ToolsList, error) {
	pages, err := parseLists(data, []List{list}, before, limit, true)
	if err != nil {
		return nil, err
	}
	return pages[0], nil
}

// ParseListsPage parses a document holding several lists in one object,
// as etdi fetch saves a server: {"tools": [...], "prompts": [...], ...}
// (or the result of a JSON-RPC response; a bare array is the first
// list). The first list is required; of the others, those whose member
// is absent are nil. The JSON values of the whole document count once
// against the bound, as ParseToolsListPage says.
func ParseListsPage(data []byte, lists []List, before, limit int) ([]*ToolsList, error) {
	return parseLists(data, lists, before, limit, false)
}

func parseLists(data []byte, lists []List, before, limit int, resultOnly bool) ([]*ToolsList, error) {
	if limit <= 0 || limit > MaxNodes {
		limit, before = MaxNodes, 0
	}
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("%s list larger than %d bytes", lists[0].Member, MaxManifestSize)
	}
	// The entries arrays of the three shapes are streamed, one at a time:
	// path 0 is the bare array, then for each list its member in a result
	// object and in a response.
	paths := [][]string{{}}
	prefixes := []string{""}
	for _, l := range lists {
		paths = append(paths, []string{l.Member}, []string{"result", l.Member})
		prefixes = append(prefixes, l.Member, "result."+l.Member)
	}
	listOf := func(which int) List {
		if which == 0 {
			return lists[0]
		}
		return lists[(which-1)/2]
	}
	entries := make([][]LiveTool, len(paths))
	metas := make([][]*Value, len(paths))
	hook := &streamHook{
		paths:  paths,
		before: before,
		limit:  limit,
		fn: func(which, i int, v *Value) error {
			list := listOf(which)
			if i >= MaxTools {
				return &FieldError{prefixes[which], fmt.Sprintf("more than %d %s", MaxTools, list.Member)}
			}
			o, err := Field{prefixes[which] + "[" + strconv.Itoa(i) + "]", v}.Object()
			if err != nil {
				return err
			}
			name, err := o.Field(list.Key).Str()
			if err != nil {
				return err
			}
			if len(name) > list.MaxKey {
				return o.Field(list.Key).Errorf("%s longer than %d bytes", list.Key, list.MaxKey)
			}
			c, d := canonicalDefinition(o.V)
			entries[which] = append(entries[which], LiveTool{Name: strings.Clone(name), Canonical: c, Digest: d})
			if m := o.V.Get("_meta"); m != nil && m.Kind == Object {
				metas[which] = append(metas[which], m)
			}
			return nil
		},
	}
	v, err := parseJSON(data, hook)
	if err != nil {
		return nil, err
	}
	out := make([]*ToolsList, len(lists))
	if resultOnly {
		o, err := (Field{"", v}).Object()
		if err != nil {
			return nil, err
		}
		for _, m := range o.V.Members {
			if m.Name != lists[0].Member && strings.EqualFold(m.Name, lists[0].Member) {
				return nil, fmt.Errorf("member %q of the result differs from %q only in case", m.Name, lists[0].Member)
			}
		}
		if _, err := o.Field(lists[0].Member).Array(); err != nil {
			return nil, err
		}
		out[0] = &ToolsList{Tools: entries[1], ToolMetas: metas[1], Nodes: hook.nodes, NextCursor: o.V.Get("nextCursor")}
		if m := o.Field("_meta"); m.V != nil {
			if _, err := m.Object(); err != nil {
				return nil, err
			}
			out[0].Meta = m.V
		}
		return out, nil
	}
	if v.Kind != Object {
		if _, err := (Field{"", v}).Array(); err != nil {
			return nil, err
		}
		out[0] = &ToolsList{Tools: entries[0], ToolMetas: metas[0], Nodes: hook.nodes}
		return out, nil
	}
	f, shape := Field{"", v}, 1
	if r := v.Get("result"); r != nil && v.Get("jsonrpc") != nil {
		f, shape = Field{"result", r}, 2
	}
	o, err := f.Object()
	if err != nil {
		return nil, err
	}
	var meta *Value
	if m := o.Field("_meta"); m.V != nil {
		if _, err := m.Object(); err != nil {
			return nil, err
		}
		meta = m.V
	}
	for i, l := range lists {
		member := o.Field(l.Member)
		if member.V == nil && i > 0 {
			continue
		}
		if _, err := member.Array(); err != nil {
			return nil, err
		}
		which := 1 + 2*i + shape - 1
		out[i] = &ToolsList{Tools: entries[which], ToolMetas: metas[which], Nodes: hook.nodes}
	}
	out[0].Meta, out[0].NextCursor = meta, o.V.Get("nextCursor")
	return out, nil
}
