package gate

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/strictjson"
)

// paramsError says why the gate cannot read a host's params as strictly
// as it must (docs/gate.md#runtime-gate): the request is answered -32602 and never
// relayed.
type paramsError struct{ msg string }

func (e *paramsError) Error() string { return e.msg }

// strictObject returns the raw values of the members of the JSON object
// obj (a decoded message's slice: valid JSON) that the gate reads, by
// name; where names where obj is (for errors: "params", "params.ref").
// obj absent or null has none. It is refused when it is not an object,
// when two of its member names are equal or equal under case folding (a
// peer may read either), or when a member differs from one the gate
// reads only in case (a peer that matches names case-insensitively reads
// it, the gate would not).
func strictObject(obj []byte, where string, read ...string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(obj) == 0 || string(obj) == "null" {
		return out, nil
	}
	names := mcpclient.Names(obj)
	if names == nil {
		return nil, &paramsError{where + " is not an object"}
	}
	if hasTwice(names) {
		return nil, &paramsError{where + " holds a member twice (or two that differ only in case)"}
	}
	for _, n := range names {
		for _, r := range read {
			if n != r && foldKey(n) == foldKey(r) {
				return nil, &paramsError{fmt.Sprintf("%s holds %q, which differs from %q only in case", where, clipText(n), r)}
			}
		}
	}
	for _, r := range read {
		if raw := mcpclient.Member(obj, r); raw != nil {
			out[r] = raw
		}
	}
	return out, nil
}

// strictString reads a string value under etdi's strict profile (SPEC.md
// §2); absent is "", false.
func strictString(raw []byte, where string) (string, bool, error) {
	if raw == nil {
		return "", false, nil
	}
	v, err := strictjson.Parse(raw)
	if err != nil {
		return "", false, &paramsError{where + ": " + err.Error()}
	}
	if v.Kind != strictjson.String {
		return "", false, &paramsError{where + " is not a string"}
	}
	return v.Str, true, nil
}

// uriNotNormal says why uri, a URI a host asks to read that is not one
// the server listed, is not written as RFC 3986 §6.2.2 normalizes it
// (with no empty path segment and no backslash); "" when it is. A server
// reading files resolves "file:///tmp/../etc/passwd", "file:///etc//passwd"
// or "file:///etc/%70asswd" to "file:///etc/passwd", which a policy
// forbidding that URI would not see.
func uriNotNormal(uri string) string {
	for i := 0; i < len(uri); i++ {
		switch c := uri[i]; {
		case c < 0x20 || c == 0x7f:
			return "it holds a control character"
		case c == '\\':
			return "it holds a backslash"
		case c == '%' && i+2 < len(uri) && isUnreserved(unhex(uri[i+1])<<4|unhex(uri[i+2])):
			return "it percent-encodes " + uri[i:i+3] + ", which stands for itself"
		}
	}
	// A dot segment anywhere, in the query or fragment too: a server
	// that splits the URI otherwise than etdi still meets none.
	if strings.Contains(uri, "/./") || strings.Contains(uri, "/../") {
		return "it has a dot segment"
	}
	rest := uri
	if i := strings.IndexAny(rest, ":/?#"); i > 0 && rest[i] == ':' {
		if rest[:i] != strings.ToLower(rest[:i]) {
			return "its scheme is not in lower case"
		}
		rest = rest[i+1:]
	}
	if strings.HasPrefix(rest, "//") {
		rest = rest[2:]
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			rest = rest[i:]
		} else {
			rest = ""
		}
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	segs := strings.Split(rest, "/")
	for i, seg := range segs {
		switch {
		case seg == "." || seg == "..":
			return "its path has a dot segment"
		case seg == "" && i > 0 && i < len(segs)-1:
			return "its path has an empty segment"
		}
	}
	// A server that decodes the path before it resolves it reads
	// "..%2F..%2Fetc" as two dot segments.
	for _, seg := range strings.FieldsFunc(encodedSlash.Replace(rest), func(r rune) bool { return r == '/' }) {
		if seg == "." || seg == ".." {
			return "its path has a dot segment between encoded slashes"
		}
	}
	return ""
}

// encodedSlash decodes the slashes and backslashes of a path.
var encodedSlash = strings.NewReplacer("%2F", "/", "%2f", "/", "%5C", "/", "%5c", "/")

// isUnreserved reports whether c is an RFC 3986 unreserved character.
func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// unhex is the value of the hex digit c; 0xff (no unreserved character
// then) when it is not one.
func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10
	}
	return 0xff
}

// hasTwice reports whether a name occurs twice, or two names that a JSON
// decoder matching names case-insensitively (encoding/json, Unicode simple
// folding) takes as one. It takes linear time: a message may hold
// millions of names.
func hasTwice(names []string) bool {
	seen := make(map[string]struct{}, len(names))
	for _, n := range names {
		k := foldKey(n)
		if _, ok := seen[k]; ok {
			return true
		}
		seen[k] = struct{}{}
	}
	return false
}

// foldKey returns the same key for two strings exactly when
// strings.EqualFold holds of them: each rune replaced by the least rune of
// its Unicode simple folding orbit ("k", "K" and U+212A KELVIN SIGN all
// become "K"), a byte that is not UTF-8 by U+FFFD, as EqualFold reads it.
func foldKey(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			r -= 'a' - 'A'
		case r >= utf8.RuneSelf:
			least := r
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				least = min(least, f)
			}
			r = least
		}
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}
