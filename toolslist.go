package etdi

import "fmt"

// LiveTool is one tool as a server lists it in tools/list.
type LiveTool struct {
	Name string
	// Definition is the tool object as received, including any _meta.
	Definition *Value
	// Digest is DefinitionDigest(Definition).
	Digest Digest
}

// ToolsList is a parsed tools/list result.
type ToolsList struct {
	Tools []LiveTool
	// Meta is the result's _meta object, if any (may carry an in-band
	// bundle).
	Meta *Value
}

// ParseToolsList parses a saved tools/list response (SPEC.md §8). Three
// shapes are accepted: the result object {"tools": [...]}, a whole JSON-RPC
// response {"jsonrpc": "2.0", "id": ..., "result": {"tools": [...]}}, or a
// bare array of tool objects. Each tool must be an object with a string
// name. Duplicate names are kept; package verify reports them.
func ParseToolsList(data []byte) (*ToolsList, error) {
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("tools list larger than %d bytes", MaxManifestSize)
	}
	v, err := ParseJSON(data)
	if err != nil {
		return nil, err
	}
	f := Field{"", v}
	tl := &ToolsList{}
	if v.Kind == Object {
		if r := v.Get("result"); r != nil && v.Get("jsonrpc") != nil {
			f = Field{"result", r}
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
		f = o.Field("tools")
	}
	a, err := f.Array()
	if err != nil {
		return nil, err
	}
	if len(a.V.Elems) > MaxTools {
		return nil, f.Errorf("more than %d tools", MaxTools)
	}
	for i := range a.V.Elems {
		o, err := a.Elem(i).Object()
		if err != nil {
			return nil, err
		}
		name, err := o.Field("name").Str()
		if err != nil {
			return nil, err
		}
		if len(name) > MaxNameLen {
			return nil, o.Field("name").Errorf("tool name longer than %d bytes", MaxNameLen)
		}
		tl.Tools = append(tl.Tools, LiveTool{Name: name, Definition: o.V, Digest: DefinitionDigest(o.V)})
	}
	return tl, nil
}
