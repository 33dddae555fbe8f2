package strictjson

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Limits applied to every JSON document etdi parses. See SPEC.md §2.
const (
	// MaxDepth is the deepest nesting of arrays and objects accepted.
	MaxDepth = 64
	// MaxSafeInteger is the largest magnitude a JSON number may have
	// (I-JSON, RFC 7493 §2.2): 2^53-1.
	MaxSafeInteger = 1<<53 - 1
	// MaxNodes is the most JSON values (every object, array, string,
	// number, boolean and null, at any depth) one document may hold. A
	// parsed value costs about 100 bytes, far more than the 2 bytes of
	// "0,", so the byte limits alone do not bound memory or time.
	MaxNodes = 1_000_000
)

// Kind is the type of a JSON value.
type Kind uint8

// The JSON value kinds.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
	// raw holds already canonical JSON text in Str; etdi builds such values
	// only internally, to embed stored definitions without re-parsing.
	raw
)

func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "invalid"
}

// RawValue returns a value that stands for JSON text already in canonical
// form (RFC 8785): [AppendCanonical] copies it as it is, without parsing
// it again. The caller vouches for the text.
func RawValue(canonical string) *Value { return &Value{Kind: raw, Str: canonical} }

// Value is a parsed JSON value. Objects keep their members in document
// order; duplicate member names are rejected by the parser, so a name
// identifies at most one member.
type Value struct {
	Kind    Kind
	Bool    bool
	Num     float64
	Str     string
	Elems   []*Value
	Members []Member
}

// Member is one name/value pair of a JSON object.
type Member struct {
	Name  string
	Value *Value
}

// Get returns the member of an object named exactly name (case-sensitive),
// or nil.
func (v *Value) Get(name string) *Value {
	if v == nil || v.Kind != Object {
		return nil
	}
	for i := range v.Members {
		if v.Members[i].Name == name {
			return v.Members[i].Value
		}
	}
	return nil
}

// SyntaxError reports JSON that etdi refuses: malformed, or well-formed but
// outside the accepted profile (duplicate names, unsafe numbers, invalid
// UTF-8, too deep). Offset is the byte offset of the problem.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// Parse parses data as a single JSON value under etdi's strict profile
// (SPEC.md §2): RFC 8259 syntax, UTF-8 only, no byte order mark, no
// duplicate member names, no lone surrogate escapes, numbers finite and of
// magnitude at most 2^53-1, nesting at most [MaxDepth].
func Parse(data []byte) (*Value, error) {
	return ParseStream(data, nil)
}

// A Stream makes [ParseStream] hand the elements of some arrays to a
// function one by one instead of storing them, so a large list never exists
// as one tree. A streamed array keeps no elements.
type Stream struct {
	// Paths are the streamed arrays, each a list of member names from the
	// root (an empty path is a top-level array).
	Paths [][]string
	// Each receives every element of a streamed array: the index of its
	// path in Paths and its index in the array. An error stops the parse.
	Each func(path, index int, v *Value) error
	// MaxElemNodes, if set, bounds the JSON values of one streamed
	// element; ElemName names an element in the error ("the tool
	// definition").
	MaxElemNodes int
	ElemName     string
	// Before and Limit, if Limit is set, count the document as part of a
	// larger whole named Whole: Before values came earlier and the whole
	// may hold at most Limit.
	Before, Limit int
	Whole         string
	// Nodes is set to the number of values of the document.
	Nodes int
}

// arrayMarker stands for "inside an array" in the parser's path.
const arrayMarker = "\x00[]"

// ParseStream parses data as [Parse] does, handing the elements of the
// arrays s names to s.Each instead of storing them. A nil s streams
// nothing.
func ParseStream(data []byte, s *Stream) (*Value, error) {
	hook := s
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return nil, &SyntaxError{off, "invalid UTF-8"}
	}
	// One copy of the input; every unescaped string is a substring of it.
	p := &parser{data: string(data), hook: hook, maxNodes: MaxNodes, scope: "the document"}
	if hook != nil && hook.Limit > 0 {
		p.nodes, p.maxNodes, p.scope = hook.Before, hook.Limit, hook.Whole
	}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, p.errf("unexpected data after the top-level value")
	}
	if hook != nil {
		hook.Nodes = p.nodes - hook.Before
	}
	return v, nil
}

type parser struct {
	data string
	pos  int
	// Scratch stacks: a container's children are collected here and
	// copied into an exactly sized slice when it closes.
	members []Member
	elems   []*Value
	// path and hook implement Stream.
	path []string
	hook *Stream
	// nodes counts the values of the document; defNodes those of the
	// streamed element being parsed, if inDef.
	nodes, defNodes, defIndex int
	inDef                     bool
	// maxNodes bounds nodes; scope names what it bounds.
	maxNodes int
	scope    string
}

// hookFor returns the index of the hook path equal to the current path,
// or -1.
func (p *parser) hookFor() int {
	if p.hook == nil {
		return -1
	}
	for i, hp := range p.hook.Paths {
		if len(hp) != len(p.path) {
			continue
		}
		match := true
		for j := range hp {
			if hp[j] != p.path[j] {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}

func (p *parser) errf(format string, args ...any) error {
	return &SyntaxError{p.pos, fmt.Sprintf(format, args...)}
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (*Value, error) {
	if p.pos >= len(p.data) {
		return nil, p.errf("unexpected end of input")
	}
	// Counted before the value is built, so the limits hold while parsing.
	p.nodes++
	if p.nodes > p.maxNodes {
		return nil, p.errf("more than %d JSON values in %s", p.maxNodes, p.scope)
	}
	if p.inDef && p.hook.MaxElemNodes > 0 {
		p.defNodes++
		if p.defNodes > p.hook.MaxElemNodes {
			return nil, p.errf("more than %d JSON values in %s at index %d", p.hook.MaxElemNodes, p.hook.ElemName, p.defIndex)
		}
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &Value{Kind: String, Str: s}, nil
	case c == 't':
		return p.literal("true", &Value{Kind: Bool, Bool: true})
	case c == 'f':
		return p.literal("false", &Value{Kind: Bool})
	case c == 'n':
		return p.literal("null", &Value{Kind: Null})
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.errf("unexpected character %q", rune(c))
	}
}

func (p *parser) literal(lit string, v *Value) (*Value, error) {
	if !strings.HasPrefix(p.data[p.pos:], lit) {
		return nil, p.errf("invalid literal")
	}
	p.pos += len(lit)
	return v, nil
}

func (p *parser) object(depth int) (*Value, error) {
	if depth > MaxDepth {
		return nil, p.errf("nesting deeper than %d", MaxDepth)
	}
	p.pos++ // '{'
	v := &Value{Kind: Object}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	base := len(p.members)
	defer func() { p.members = p.members[:base] }()
	var seen map[string]struct{}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errf("expected member name")
		}
		start := p.pos
		name, err := p.str()
		if err != nil {
			return nil, err
		}
		// Small objects are checked linearly; larger ones with a map.
		mine := p.members[base:]
		if len(mine) >= 8 && seen == nil {
			seen = make(map[string]struct{}, 16)
			for _, m := range mine {
				seen[m.Name] = struct{}{}
			}
		}
		dup := false
		if seen != nil {
			_, dup = seen[name]
			seen[name] = struct{}{}
		} else {
			for _, m := range mine {
				if m.Name == name {
					dup = true
					break
				}
			}
		}
		if dup {
			return nil, &SyntaxError{start, fmt.Sprintf("duplicate member name %q", truncate(name, 64))}
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errf("expected ':' after member name")
		}
		p.pos++
		p.skipSpace()
		if p.hook != nil {
			p.path = append(p.path, name)
		}
		elem, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		if p.hook != nil {
			p.path = p.path[:len(p.path)-1]
		}
		p.members = append(p.members, Member{name, elem})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errf("unexpected end of input in object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			v.Members = append(make([]Member, 0, len(p.members)-base), p.members[base:]...)
			return v, nil
		default:
			return nil, p.errf("expected ',' or '}' in object")
		}
	}
}

func (p *parser) array(depth int) (*Value, error) {
	if depth > MaxDepth {
		return nil, p.errf("nesting deeper than %d", MaxDepth)
	}
	p.pos++ // '['
	v := &Value{Kind: Array}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	base := len(p.elems)
	defer func() { p.elems = p.elems[:base] }()
	which := p.hookFor()
	if p.hook != nil {
		p.path = append(p.path, arrayMarker)
		defer func() { p.path = p.path[:len(p.path)-1] }()
	}
	for index := 0; ; index++ {
		p.skipSpace()
		if which >= 0 {
			p.inDef, p.defNodes, p.defIndex = true, 0, index
		}
		elem, err := p.value(depth)
		if which >= 0 {
			p.inDef = false
		}
		if err != nil {
			return nil, err
		}
		if which >= 0 {
			if err := p.hook.Each(which, index, elem); err != nil {
				return nil, err
			}
		} else {
			p.elems = append(p.elems, elem)
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errf("unexpected end of input in array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			if which < 0 {
				v.Elems = append(make([]*Value, 0, len(p.elems)-base), p.elems[base:]...)
			}
			return v, nil
		default:
			return nil, p.errf("expected ',' or ']' in array")
		}
	}
}

func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := p.data[start:p.pos]
			p.pos++
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.errf("control character in string")
		}
		p.pos++
	}
	var b strings.Builder
	b.WriteString(p.data[start:p.pos])
	for {
		if p.pos >= len(p.data) {
			return "", p.errf("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c < 0x20:
			return "", p.errf("control character in string")
		case c != '\\':
			b.WriteByte(c)
			p.pos++
			continue
		}
		if err := p.escape(&b); err != nil {
			return "", err
		}
	}
}

// escape reads the escape sequence at p.pos (a backslash) into b.
func (p *parser) escape(b *strings.Builder) error {
	if p.pos+1 >= len(p.data) {
		return p.errf("unterminated escape")
	}
	e := p.data[p.pos+1]
	p.pos += 2
	switch e {
	case '"', '\\', '/':
		b.WriteByte(e)
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		r, err := p.unicodeEscape()
		if err != nil {
			return err
		}
		b.WriteRune(r)
	default:
		return p.errf("invalid escape \\%c", e)
	}
	return nil
}

// unicodeEscape reads the four hex digits after `\u`, and the low
// surrogate escape that must follow a high surrogate.
func (p *parser) unicodeEscape() (rune, error) {
	r, err := p.hex4()
	if err != nil || !utf16.IsSurrogate(r) {
		return r, err
	}
	if r >= 0xDC00 {
		return 0, p.errf("lone low surrogate \\u%04x", r)
	}
	if p.pos+1 >= len(p.data) || p.data[p.pos] != '\\' || p.data[p.pos+1] != 'u' {
		return 0, p.errf("lone high surrogate \\u%04x", r)
	}
	p.pos += 2
	r2, err := p.hex4()
	if err != nil {
		return 0, err
	}
	if r2 < 0xDC00 || r2 > 0xDFFF {
		return 0, p.errf("high surrogate \\u%04x not followed by a low surrogate", r)
	}
	return utf16.DecodeRune(r, r2), nil
}

func (p *parser) hex4() (rune, error) {
	if p.pos+4 > len(p.data) {
		return 0, p.errf("short \\u escape")
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, p.errf("invalid \\u escape")
		}
	}
	p.pos += 4
	return r, nil
}

// scanNumber advances over a number of the RFC 8259 grammar.
func (p *parser) scanNumber() error {
	d := p.data
	if d[p.pos] == '-' {
		p.pos++
	}
	if p.pos >= len(d) {
		return p.errf("invalid number")
	}
	switch {
	case d[p.pos] == '0':
		p.pos++
	case d[p.pos] >= '1' && d[p.pos] <= '9':
		p.digits()
	default:
		return p.errf("invalid number")
	}
	if p.pos < len(d) && d[p.pos] == '.' {
		p.pos++
		if p.digits() == 0 {
			return p.errf("invalid number: no digits after '.'")
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return p.errf("invalid number: no digits in exponent")
		}
	}
	return nil
}

// digits advances over decimal digits and returns how many.
func (p *parser) digits() int {
	start := p.pos
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
	}
	return p.pos - start
}

func (p *parser) number() (*Value, error) {
	start := p.pos
	if err := p.scanNumber(); err != nil {
		return nil, err
	}
	d := p.data
	lit := d[start:p.pos]
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, &SyntaxError{start, fmt.Sprintf("invalid number %q", lit)}
	}
	if math.IsInf(f, 0) || math.Abs(f) > MaxSafeInteger {
		return nil, &SyntaxError{start, fmt.Sprintf("number %s is beyond ±2^53-1", truncate(lit, 40))}
	}
	return &Value{Kind: Number, Num: f}, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
