package etdi

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/etdi-dev/etdi/strictjson"
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
func (t *LiveTool) Definition() *strictjson.Value { return mustParseCanonical(t.Canonical) }

// ToolsList is a parsed tools/list result.
type ToolsList struct {
	Tools []LiveTool
	// Meta is the result's _meta object, if any (may carry an in-band
	// bundle).
	Meta *strictjson.Value
	// ToolMetas are the _meta objects of the tools that have one, as
	// received (they may carry an in-band bundle too).
	ToolMetas []*strictjson.Value
	// NextCursor is the result's nextCursor member as received, or nil.
	NextCursor *strictjson.Value
	// Nodes is the number of JSON values of the document (at most
	// MaxNodes), so that a caller reading many pages can bound their sum.
	Nodes int
	// Others are the further lists ListOptions.Lists asked for, in
	// order; nil where the document lacks one.
	Others []*ToolsList
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

// ListOptions say how [ParseList] reads a listing. The zero value reads a
// saved tools/list response.
type ListOptions struct {
	// Lists are the lists the document holds in one object, as etdi fetch
	// saves a server: {"tools": [...], "prompts": [...], ...}. The first is
	// required; the others are in ToolsList.Others, in order, nil when
	// their member is absent. Empty means ListTools alone.
	Lists []List
	// Result reads the document as the result of one page as a server
	// answers it (MCP): an object whose member Lists[0].Member is the
	// array of entries, read exactly as a host reads it. No other shape is
	// taken: a result that is a bare array, or that holds its entries
	// under "result" as a saved JSON-RPC response does, would be read one
	// way here and another way by the host. Any member whose name differs
	// from Lists[0].Member only in case is refused: a decoder that matches
	// names case-insensitively (encoding/json) would read it instead.
	// Only the first list is read.
	Result bool
	// Before and Limit count the document as one page of a listing of
	// several pages: Before JSON values were in earlier pages, and all
	// pages together may hold at most Limit (at most MaxNodes; 0 means
	// MaxNodes and no earlier pages). The bound holds while the page is
	// parsed.
	Before, Limit int
}

// ParseList parses a listing (SPEC.md §8, docs/live.md#live-servers). Unless o.Result is set,
// three shapes are accepted: the result object {"tools": [...]}, a whole
// JSON-RPC response {"jsonrpc": "2.0", "id": ..., "result": {"tools":
// [...]}}, or a bare array of entries (of the first list). Each entry must
// be an object with a string key ([List.Key]: a tool's name, a resource's
// URI); it is in [ToolsList.Tools], canonical and digested like a tool
// definition (SPEC.md §3). Duplicate keys are kept; package verify
// reports them. The JSON values of the whole document count once against
// the bound of o.Limit.
func ParseList(data []byte, o ListOptions) (*ToolsList, error) {
	lists := o.Lists
	if len(lists) == 0 {
		lists = []List{ListTools}
	}
	pages, err := parseLists(data, lists, o.Before, o.Limit, o.Result)
	if err != nil {
		return nil, err
	}
	if len(pages) > 1 {
		pages[0].Others = pages[1:]
	}
	return pages[0], nil
}

func parseLists(data []byte, lists []List, before, limit int, resultOnly bool) ([]*ToolsList, error) {
	if limit <= 0 || limit > strictjson.MaxNodes {
		limit, before = strictjson.MaxNodes, 0
	}
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("%s list larger than %d bytes", lists[0].Member, MaxManifestSize)
	}
	ls := newListStream(lists)
	hook := definitions(ls.paths, ls.add)
	hook.Before, hook.Limit, hook.Whole = before, limit, "the listing (all pages together)"
	v, err := strictjson.ParseStream(data, hook)
	if err != nil {
		return nil, err
	}
	if resultOnly {
		return ls.result(v, hook.Nodes)
	}
	return ls.saved(v, hook.Nodes)
}

// listStream collects the entries of the lists of one document as the
// parser streams them. The entries arrays of the three shapes are
// streamed, one at a time: path 0 is the bare array, then for each list
// its member in a result object and in a response.
type listStream struct {
	lists    []List
	paths    [][]string
	prefixes []string
	entries  [][]LiveTool
	metas    [][]*strictjson.Value
}

func newListStream(lists []List) *listStream {
	ls := &listStream{lists: lists, paths: [][]string{{}}, prefixes: []string{""}}
	for _, l := range lists {
		ls.paths = append(ls.paths, []string{l.Member}, []string{"result", l.Member})
		ls.prefixes = append(ls.prefixes, l.Member, "result."+l.Member)
	}
	ls.entries = make([][]LiveTool, len(ls.paths))
	ls.metas = make([][]*strictjson.Value, len(ls.paths))
	return ls
}

// listOf returns the list whose entries path which streams.
func (ls *listStream) listOf(which int) List {
	if which == 0 {
		return ls.lists[0]
	}
	return ls.lists[(which-1)/2]
}

// add takes entry i of the array at path which.
func (ls *listStream) add(which, i int, v *strictjson.Value) error {
	list := ls.listOf(which)
	if i >= MaxTools {
		return &strictjson.FieldError{Path: ls.prefixes[which], Msg: fmt.Sprintf("more than %d %s", MaxTools, list.Member)}
	}
	o, err := strictjson.Field{Path: ls.prefixes[which] + "[" + strconv.Itoa(i) + "]", V: v}.Object()
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
	ls.entries[which] = append(ls.entries[which], LiveTool{Name: strings.Clone(name), Canonical: c, Digest: d})
	if m := o.V.Get("_meta"); m != nil && m.Kind == strictjson.Object {
		ls.metas[which] = append(ls.metas[which], m)
	}
	return nil
}

// page returns the entries streamed at path which.
func (ls *listStream) page(which, nodes int) *ToolsList {
	return &ToolsList{Tools: ls.entries[which], ToolMetas: ls.metas[which], Nodes: nodes}
}

// result reads v as ListOptions.Result says: the result object of a
// server's page, its first list only.
func (ls *listStream) result(v *strictjson.Value, nodes int) ([]*ToolsList, error) {
	member := ls.lists[0].Member
	o, err := strictjson.Root(v).Object()
	if err != nil {
		return nil, err
	}
	for _, m := range o.V.Members {
		if m.Name != member && strings.EqualFold(m.Name, member) {
			return nil, fmt.Errorf("member %q of the result differs from %q only in case", m.Name, member)
		}
	}
	if _, err := o.Field(member).Array(); err != nil {
		return nil, err
	}
	meta, err := optObject(o.Field("_meta"))
	if err != nil {
		return nil, err
	}
	out := make([]*ToolsList, len(ls.lists))
	out[0] = ls.page(1, nodes)
	out[0].NextCursor, out[0].Meta = o.V.Get("nextCursor"), meta
	return out, nil
}

// saved reads v in any of the three shapes of a saved listing.
func (ls *listStream) saved(v *strictjson.Value, nodes int) ([]*ToolsList, error) {
	out := make([]*ToolsList, len(ls.lists))
	if v.Kind != strictjson.Object {
		if _, err := strictjson.Root(v).Array(); err != nil {
			return nil, err
		}
		out[0] = ls.page(0, nodes)
		return out, nil
	}
	f, shape := strictjson.Root(v), 1
	if r := v.Get("result"); r != nil && v.Get("jsonrpc") != nil {
		f, shape = strictjson.Field{Path: "result", V: r}, 2
	}
	o, err := f.Object()
	if err != nil {
		return nil, err
	}
	meta, err := optObject(o.Field("_meta"))
	if err != nil {
		return nil, err
	}
	for i, l := range ls.lists {
		member := o.Field(l.Member)
		if member.V == nil && i > 0 {
			continue
		}
		if _, err := member.Array(); err != nil {
			return nil, err
		}
		out[i] = ls.page(1+2*i+shape-1, nodes)
	}
	out[0].Meta, out[0].NextCursor = meta, o.V.Get("nextCursor")
	return out, nil
}

// optObject returns the value of an optional field that must be an
// object when present.
func optObject(f strictjson.Field) (*strictjson.Value, error) {
	if f.V == nil {
		return nil, nil
	}
	if _, err := f.Object(); err != nil {
		return nil, err
	}
	return f.V, nil
}
