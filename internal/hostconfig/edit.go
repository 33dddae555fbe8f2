package hostconfig

import (
	"fmt"
	"sort"

	"github.com/etdi-dev/etdi/strictjson"
)

// Node is a JSONC value (JSON with comments and trailing commas) with the
// byte span it occupies in the text it was parsed from, so that a value can
// be replaced without touching, or reformatting, anything else.
type Node struct {
	// Kind is '{', '[', '"' or 'l' (a number or literal).
	Kind       byte
	Start, End int
	Members    []NodeMember
	Elems      []*Node
	// Str is the decoded value of a string.
	Str string
}

// NodeMember is one member of an object: NameStart is the offset of the
// opening quote of its name, so [NameStart, Value.End) is the member
// without its separating comma.
type NodeMember struct {
	Name      string
	NameStart int
	Value     *Node
}

// Get returns the value of member name of an object node, or nil.
func (n *Node) Get(name string) *Node {
	if m := n.Member(name); m != nil {
		return m.Value
	}
	return nil
}

// Member returns member name of an object node, or nil.
func (n *Node) Member(name string) *NodeMember {
	if n == nil || n.Kind != '{' {
		return nil
	}
	for i := range n.Members {
		if n.Members[i].Name == name {
			return &n.Members[i]
		}
	}
	return nil
}

// ParseJSONC parses data as one JSONC value and records every value's
// span. Comments (// and /* */) and trailing commas are accepted;
// duplicate member names and nesting deeper than strictjson.MaxDepth are not.
// Strings are decoded under etdi's JSON profile.
func ParseJSONC(data []byte) (*Node, error) {
	p := &jsoncParser{data: data}
	if err := p.space(); err != nil {
		return nil, err
	}
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.pos != len(data) {
		return nil, p.errf("unexpected data after the value")
	}
	return n, nil
}

// Locate returns the node at path (member names from the root) in data.
func Locate(data []byte, path ...string) (*Node, error) {
	n, err := ParseJSONC(data)
	if err != nil {
		return nil, err
	}
	for i, name := range path {
		next := n.Get(name)
		if next == nil {
			return nil, fmt.Errorf("no member %q at %q", name, path[:i])
		}
		n = next
	}
	return n, nil
}

// Edit replaces the bytes [Start, End) with Text (Start == End inserts).
type Edit struct {
	Start, End int
	Text       string
}

// ApplyEdits returns data with the edits applied. Edits must lie within
// data and must not overlap; their order does not matter.
func ApplyEdits(data []byte, edits []Edit) ([]byte, error) {
	es := append([]Edit(nil), edits...)
	sort.SliceStable(es, func(i, j int) bool { return es[i].Start < es[j].Start })
	out := make([]byte, 0, len(data))
	pos := 0
	for _, e := range es {
		if e.Start < pos || e.End < e.Start || e.End > len(data) {
			return nil, fmt.Errorf("edit [%d,%d) overlaps another or lies outside the %d bytes", e.Start, e.End, len(data))
		}
		out = append(out, data[pos:e.Start]...)
		out = append(out, e.Text...)
		pos = e.End
	}
	return append(out, data[pos:]...), nil
}

type jsoncParser struct {
	data []byte
	pos  int
}

func (p *jsoncParser) errf(format string, args ...any) error {
	return &strictjson.SyntaxError{Offset: p.pos, Msg: fmt.Sprintf(format, args...)}
}

// space skips white space and comments.
func (p *jsoncParser) space() error {
	for p.pos < len(p.data) {
		switch c := p.data[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '/' && p.pos+1 < len(p.data) && p.data[p.pos+1] == '/':
			for p.pos < len(p.data) && p.data[p.pos] != '\n' {
				p.pos++
			}
		case c == '/' && p.pos+1 < len(p.data) && p.data[p.pos+1] == '*':
			start := p.pos
			p.pos += 2
			for {
				if p.pos+1 >= len(p.data) {
					p.pos = start
					return p.errf("unterminated comment")
				}
				if p.data[p.pos] == '*' && p.data[p.pos+1] == '/' {
					p.pos += 2
					break
				}
				p.pos++
			}
		default:
			return nil
		}
	}
	return nil
}

func (p *jsoncParser) value(depth int) (*Node, error) {
	if p.pos >= len(p.data) {
		return nil, p.errf("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{' || c == '[':
		if depth+1 > strictjson.MaxDepth {
			return nil, p.errf("nesting deeper than %d", strictjson.MaxDepth)
		}
		if c == '{' {
			return p.object(depth + 1)
		}
		return p.array(depth + 1)
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9' || c == 't' || c == 'f' || c == 'n':
		start := p.pos
		for p.pos < len(p.data) && isLiteralByte(p.data[p.pos]) {
			p.pos++
		}
		// The literal must be a JSON value of its own.
		if _, err := strictjson.Parse(p.data[start:p.pos]); err != nil {
			p.pos = start
			return nil, p.errf("invalid number or literal")
		}
		return &Node{Kind: 'l', Start: start, End: p.pos}, nil
	default:
		return nil, p.errf("unexpected character %q", rune(c))
	}
}

func isLiteralByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '+' || c == '.'
}

func (p *jsoncParser) str() (*Node, error) {
	start := p.pos
	p.pos++
	for {
		if p.pos >= len(p.data) {
			p.pos = start
			return nil, p.errf("unterminated string")
		}
		c := p.data[p.pos]
		if c == '\\' {
			p.pos += 2
			continue
		}
		p.pos++
		if c == '"' {
			break
		}
	}
	v, err := strictjson.Parse(p.data[start:p.pos])
	if err != nil || v.Kind != strictjson.String {
		p.pos = start
		return nil, p.errf("invalid string: %v", err)
	}
	return &Node{Kind: '"', Start: start, End: p.pos, Str: v.Str}, nil
}

func (p *jsoncParser) object(depth int) (*Node, error) {
	n := &Node{Kind: '{', Start: p.pos}
	p.pos++
	seen := map[string]bool{}
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.pos++
			n.End = p.pos
			return n, nil
		}
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errf("expected a member name or '}'")
		}
		name, err := p.str()
		if err != nil {
			return nil, err
		}
		if seen[name.Str] {
			p.pos = name.Start
			return nil, p.errf("duplicate member name %q", name.Str)
		}
		seen[name.Str] = true
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errf("expected ':'")
		}
		p.pos++
		if err := p.space(); err != nil {
			return nil, err
		}
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		n.Members = append(n.Members, NodeMember{Name: name.Str, NameStart: name.Start, Value: v})
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			continue
		}
		return nil, p.errf("expected ',' or '}'")
	}
}

func (p *jsoncParser) array(depth int) (*Node, error) {
	n := &Node{Kind: '[', Start: p.pos}
	p.pos++
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			n.End = p.pos
			return n, nil
		}
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		n.Elems = append(n.Elems, v)
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			continue
		}
		return nil, p.errf("expected ',' or ']'")
	}
}
