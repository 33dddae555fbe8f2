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

// ParseToolsListPage parses one page of a listing of several pages, as
// ParseToolsList does, counting its JSON values against a bound of the
// whole listing: before values were in earlier pages, and all pages
// together may hold at most limit (at most MaxNodes; 0 means MaxNodes and
// no earlier pages). The bound holds while the page is parsed.
func ParseToolsListPage(data []byte, before, limit int) (*ToolsList, error) {
	if limit <= 0 || limit > MaxNodes {
		limit, before = MaxNodes, 0
	}
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("tools list larger than %d bytes", MaxManifestSize)
	}
	// The tools arrays of the three shapes are streamed, one tool at a time.
	prefixes := []string{"", "tools", "result.tools"}
	var lists [3][]LiveTool
	var metas [3][]*Value
	hook := &streamHook{
		paths:  [][]string{{}, {"tools"}, {"result", "tools"}},
		before: before,
		limit:  limit,
		fn: func(which, i int, v *Value) error {
			if i >= MaxTools {
				return &FieldError{prefixes[which], fmt.Sprintf("more than %d tools", MaxTools)}
			}
			o, err := Field{prefixes[which] + "[" + strconv.Itoa(i) + "]", v}.Object()
			if err != nil {
				return err
			}
			name, err := o.Field("name").Str()
			if err != nil {
				return err
			}
			if len(name) > MaxNameLen {
				return o.Field("name").Errorf("tool name longer than %d bytes", MaxNameLen)
			}
			c, d := canonicalDefinition(o.V)
			lists[which] = append(lists[which], LiveTool{Name: strings.Clone(name), Canonical: c, Digest: d})
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
	tl := &ToolsList{}
	f := Field{"", v}
	which := 0
	if v.Kind == Object {
		which = 1
		if r := v.Get("result"); r != nil && v.Get("jsonrpc") != nil {
			f = Field{"result", r}
			which = 2
		}
		o, err := f.Object()
		if err != nil {
			return nil, err
		}
		if m := o.Field("_meta"); m.V != nil {
			if _, err := m.Object(); err != nil {
				return nil, err
			}
			tl.Meta = m.V
		}
		tl.NextCursor = o.V.Get("nextCursor")
		f = o.Field("tools")
	}
	if _, err := f.Array(); err != nil {
		return nil, err
	}
	tl.Tools, tl.ToolMetas, tl.Nodes = lists[which], metas[which], hook.nodes
	return tl, nil
}
