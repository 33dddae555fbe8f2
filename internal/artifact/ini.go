package artifact

import (
	"encoding/json"
	"strings"
	"unicode"
)

// iniEntry is one key = value line of an ini file (.npmrc, pip.conf) as
// the tool that reads it sees it.
type iniEntry struct {
	section string // the [section] the key is in, "" for none
	key     string
	value   string
	line    int // 1-based, for messages
}

// maxINIEntries bounds how many entries parseINI returns; a file with
// more is refused by its callers (the size bound, maxSmall, comes first).
const maxINIEntries = 4096

// parseINI reads an ini file as npm's ini package (version 4 to 6, the
// one @npmcli/config uses) decodes it: lines are split at every CR and
// LF; blank lines and lines whose first non-blank character is ';' or
// '#' are skipped; "[name]" starts a section; otherwise the text before
// the first '=' is the key and the rest the value, each trimmed, a
// value or key between matching quotes unquoted (a double-quoted one as
// a JSON string), and in an unquoted one an unescaped ';' or '#' starts
// a comment. A key ending in "[]" is an array entry of the key without
// it. Every entry is returned, later ones after earlier ones: what
// overrides what is the caller's to decide. ok is false when there are
// more than maxINIEntries entries.
//
// Where the JavaScript parser would skip a line this one cannot tell
// apart (a value holding U+2028 or U+2029), the line is kept: a caller
// that refuses unknown keys then refuses more, never less.
func parseINI(b []byte) (entries []iniEntry, ok bool) {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	section := ""
	line := 1
	for len(s) > 0 {
		at := line
		end := strings.IndexAny(s, "\r\n")
		var l string
		if end < 0 {
			l, s = s, ""
		} else {
			l = s[:end]
			if s[end] == '\n' {
				line++
			}
			s = s[end+1:]
		}
		t := jsTrim(l)
		if t == "" || t[0] == ';' || t[0] == '#' {
			continue
		}
		if strings.HasPrefix(l, "[") {
			if close := strings.IndexByte(l, ']'); close > 0 && jsTrim(l[close+1:]) == "" {
				section = iniUnquote(l[1:close])
				if len(entries) >= maxINIEntries {
					return entries, false
				}
				// A section is reported as an entry without a key, so
				// that a caller that does not expect sections sees it.
				entries = append(entries, iniEntry{section: section, line: at})
				continue
			}
		}
		k, v, hasValue := strings.Cut(l, "=")
		if k == "" {
			// "=value": the JavaScript pattern needs a key of one
			// character or more; npm skips the line.
			continue
		}
		key := iniUnquote(k)
		if len(key) > 2 && strings.HasSuffix(key, "[]") {
			key = key[:len(key)-2]
		}
		value := "true"
		if hasValue {
			value = iniUnquote(v)
		}
		if len(entries) >= maxINIEntries {
			return entries, false
		}
		entries = append(entries, iniEntry{section: section, key: key, value: value, line: at})
	}
	return entries, true
}

// jsTrim trims what JavaScript's String.prototype.trim trims: Unicode
// white space, line terminators and U+FEFF.
func jsTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '\uFEFF' })
}

// iniUnquote is the ini package's unsafe(): trimmed; between matching
// quotes, unquoted (a double-quoted string read as JSON when it is one);
// else cut at the first unescaped ';' or '#', with \; \# and \\ unescaped.
func iniUnquote(v string) string {
	v = jsTrim(v)
	if len(v) >= 1 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		inner := v
		if v[0] == '\'' {
			if len(v) >= 2 {
				inner = v[1 : len(v)-1]
			} else {
				inner = ""
			}
		}
		var s string
		if json.Unmarshal([]byte(inner), &s) == nil {
			return s
		}
		return inner
	}
	var sb strings.Builder
	esc := false
	for _, c := range v {
		switch {
		case esc:
			if c != '\\' && c != ';' && c != '#' {
				sb.WriteByte('\\')
			}
			sb.WriteRune(c)
			esc = false
		case c == ';' || c == '#':
			return jsTrim(sb.String())
		case c == '\\':
			esc = true
		default:
			sb.WriteRune(c)
		}
	}
	if esc {
		sb.WriteByte('\\')
	}
	return jsTrim(sb.String())
}

// envReplace expands ${NAME} and ${NAME?} in s with the launch's
// environment, as @npmcli/config does in keys and values: an unset NAME
// is left as written (${NAME?} becomes ""), and a backslash before the
// '$' escapes it.
func envReplace(s string, env *environ) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var sb strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			sb.WriteString(s)
			return sb.String()
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			sb.WriteString(s)
			return sb.String()
		}
		name := s[i+2 : i+2+j]
		optional := strings.HasSuffix(name, "?")
		name = strings.TrimSuffix(name, "?")
		// Backslashes before the '$': an odd count escapes it.
		k := i
		for k > 0 && s[k-1] == '\\' {
			k--
		}
		nesc := i - k
		if name == "" || strings.ContainsAny(name, "${}?") {
			sb.WriteString(s[:i+2])
			s = s[i+2:]
			continue
		}
		sb.WriteString(s[:k])
		if nesc%2 == 1 {
			sb.WriteString(strings.Repeat(`\`, nesc/2))
			sb.WriteString(s[i : i+3+j])
		} else {
			sb.WriteString(strings.Repeat(`\`, nesc/2))
			if v, set := env.lookup(name); set {
				sb.WriteString(v)
			} else if !optional {
				sb.WriteString(s[i : i+3+j])
			}
		}
		s = s[i+3+j:]
	}
}
