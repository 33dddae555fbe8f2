// Package suspect finds text in a tool definition that is aimed at the
// model rather than the person approving it (SPEC.md §21): characters a
// terminal or a review page does not show, tags and phrases that try to
// override the model's instructions or keep the user in the dark, paths
// of secrets, and the names of tools that other servers offer.
//
// Every string of the definition is scanned, member names included. A
// match is a reason to look, never a verdict: the rules are narrow enough
// that the descriptions of common servers pass.
package suspect

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/termtext"
)

// Match is one piece of suspicious text.
type Match struct {
	// Pointer is the RFC 6901 JSON Pointer of the string (or member name)
	// in the definition.
	Pointer string
	// Text is the matched text, with up to 20 characters around it for
	// hidden characters.
	Text string
	// Reason says what the text is, e.g. "hidden characters U+202E".
	Reason string
}

// MaxMatches bounds the matches reported for one definition.
const MaxMatches = 32

var rules = []struct {
	reason string
	re     *regexp.Regexp
}{
	{"an instruction tag", regexp.MustCompile(`(?i)<\s*/?\s*(important|system|instructions?|secret|hidden|admin|critical|prompt)\s*>`)},
	{"an instruction to ignore other instructions", regexp.MustCompile(`(?i)\b(ignore|disregard|forget|override)\s+(all\s+|any\s+)?(the\s+|your\s+)?(previous|prior|above|earlier|preceding|other|system)\s+(instructions|prompts?|rules|directions|guidelines)`)},
	{"an instruction to keep the user uninformed", regexp.MustCompile(`(?i)\b((do\s+not|don'?t|never|must\s+not)\s+(tell|inform|mention\s+(this\s+|it\s+)?to|reveal\s+(this\s+|it\s+)?to|notify|alert|show|let)\s+the\s+user|without\s+(telling|informing|notifying|alerting|asking)\s+the\s+user|(hide|conceal|keep)\s+(this|it)\s+(from|secret\s+from)\s+the\s+user|the\s+user\s+(must|should)\s+not\s+(know|see|be\s+told))`)},
	{"a path to secrets", regexp.MustCompile(`(?i)(~/\.ssh|\.ssh/|\bid_(rsa|dsa|ecdsa|ed25519)\b|(^|[^\w.$])\.env\b|\.aws/credentials|\bcredentials\.(json|ya?ml|toml|txt|csv|db)\b|\.git-credentials|\.netrc\b|\.pgpass\b|\.docker/config\.json|\.kube/config|/etc/(passwd|shadow)\b)`)},
}

// Scan returns the suspicious text of a definition. others are the names
// of tools other servers offer; one of them in this definition's text is
// a match when it is a whole word and distinctive: it holds '_', '-' or
// '.', or a lower-case letter followed by an upper-case one, or is at
// least 8 characters long. The definition's own name never counts (the
// same name on two servers is shadowing, reported elsewhere).
func Scan(def *etdi.Value, others []string) []Match {
	own := ""
	if n := def.Get("name"); n != nil && n.Kind == etdi.String {
		own = n.Str
	}
	var names []string
	for _, n := range others {
		if n != own && distinctive(n) {
			names = append(names, n)
		}
	}
	s := &scanner{names: names, seen: map[string]bool{}}
	s.value("", def)
	return s.out
}

type scanner struct {
	names []string
	seen  map[string]bool
	out   []Match
}

func (s *scanner) add(m Match) {
	key := m.Pointer + "\x00" + m.Reason
	if len(s.out) >= MaxMatches || s.seen[key] {
		return
	}
	s.seen[key] = true
	s.out = append(s.out, m)
}

func (s *scanner) value(ptr string, v *etdi.Value) {
	switch v.Kind {
	case etdi.String:
		s.text(ptr, v.Str)
	case etdi.Array:
		for i, e := range v.Elems {
			s.value(ptr+"/"+strconv.Itoa(i), e)
		}
	case etdi.Object:
		for _, m := range v.Members {
			p := ptr + "/" + escapePointer(m.Name)
			s.text(p, m.Name)
			s.value(p, m.Value)
		}
	}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func (s *scanner) text(ptr, str string) {
	if len(s.out) >= MaxMatches {
		return
	}
	if m, ok := hidden(str); ok {
		m.Pointer = ptr
		s.add(m)
	}
	for _, r := range rules {
		if loc := r.re.FindStringIndex(str); loc != nil {
			s.add(Match{Pointer: ptr, Text: strings.TrimLeft(str[loc[0]:loc[1]], " \t\n\"'`(/$"), Reason: r.reason})
		}
	}
	for _, n := range s.names {
		if wholeWord(str, n) {
			s.add(Match{Pointer: ptr, Text: n, Reason: "the name of a tool of another server"})
		}
	}
}

// hidden finds the escaped code points of str other than tab, line feed
// and carriage return, which descriptions use as layout.
func hidden(str string) (Match, bool) {
	var cps []string
	first := -1
	for i, r := range str {
		if r == '\t' || r == '\n' || r == '\r' || !termtext.Hidden(r) {
			continue
		}
		if first < 0 {
			first = i
		}
		if c := fmt.Sprintf("U+%04X", r); len(cps) < 8 && !containsString(cps, c) {
			cps = append(cps, c)
		}
	}
	if first < 0 {
		return Match{}, false
	}
	start, end := first, first
	for n := 0; n < 20 && start > 0; n++ {
		_, size := utf8.DecodeLastRuneInString(str[:start])
		start -= size
	}
	for n := 0; n < 21 && end < len(str); n++ {
		_, size := utf8.DecodeRuneInString(str[end:])
		end += size
	}
	return Match{Text: str[start:end], Reason: "hidden characters " + strings.Join(cps, ", ")}, true
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func distinctive(name string) bool {
	if utf8.RuneCountInString(name) < 3 {
		return false
	}
	if strings.ContainsAny(name, "_-.") || utf8.RuneCountInString(name) >= 8 {
		return true
	}
	prev := rune(0)
	for _, r := range name {
		if unicode.IsLower(prev) && unicode.IsUpper(r) {
			return true
		}
		prev = r
	}
	return false
}

func identRune(r rune) bool {
	return r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// wholeWord reports whether name occurs in s with no letter, digit, '_'
// or '-' right before or after it.
func wholeWord(s, name string) bool {
	for off := 0; off < len(s); {
		i := strings.Index(s[off:], name)
		if i < 0 {
			return false
		}
		i += off
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[i+len(name):])
		if (i == 0 || !identRune(before)) && (i+len(name) == len(s) || !identRune(after)) {
			return true
		}
		off = i + 1
	}
	return false
}
