// Package suspect finds text in a tool definition that is aimed at the
// model rather than the person approving it (SPEC.md §22): characters a
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
	"slices"
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

// rules are tried on a string only when its lower-case form holds one of
// their hints (and, if set, also one of their second hints), which keeps
// scanning thousands of harmless definitions cheap.
var rules = []struct {
	reason string
	hints  []string
	hints2 []string
	re     *regexp.Regexp
}{
	{"an instruction tag", []string{"<"}, nil, regexp.MustCompile(`(?i)<\s*/?\s*(important|system|instructions?|secret|hidden|admin|critical|prompt)\s*>`)},
	{"an instruction to ignore other instructions", []string{"ignore", "disregard", "forget", "override"}, nil, regexp.MustCompile(`(?i)\b(ignore|disregard|forget|override)\s+(all\s+|any\s+)?(the\s+|your\s+)?(previous|prior|above|earlier|preceding|other|system)\s+(instructions|prompts?|rules|directions|guidelines)`)},
	{"an instruction to keep the user uninformed", []string{"user"}, []string{"not", "n't", "never", "without", "hide", "conceal", "keep"}, regexp.MustCompile(`(?i)\b((do\s+not|don'?t|never|must\s+not)\s+(tell|inform|mention\s+(this\s+|it\s+)?to|reveal\s+(this\s+|it\s+)?to|notify|alert|show|let)\s+the\s+user|without\s+(telling|informing|notifying|alerting|asking)\s+the\s+user|(hide|conceal|keep)\s+(this|it)\s+(from|secret\s+from)\s+the\s+user|the\s+user\s+(must|should)\s+not\s+(know|see|be\s+told))`)},
	{"a path to secrets", []string{"ssh", "id_", ".env", "credentials", ".netrc", ".pgpass", ".docker", ".kube", "/etc/", ".cursor", "claude_desktop", ".gnupg"}, nil, regexp.MustCompile(`(?i)(~/\.ssh|~/\.cursor/|claude_desktop_config\.json|\.gnupg\b|\.ssh/|\bid_(rsa|dsa|ecdsa|ed25519)\b|(^|[^\w.$])\.env\b|\.aws/credentials|\bcredentials\.(json|ya?ml|toml|txt|csv|db)\b|\.git-credentials|\.netrc\b|\.pgpass\b|\.docker/config\.json|\.kube/config|/etc/(passwd|shadow)\b)`)},
}

// Names tells whether a word is the name of a tool of another server.
// Scan asks only about distinctive words: holding '_', '-' or '.', or a
// lower-case letter followed by an upper-case one, or at least 8
// characters long, so common words (search, echo, add) never match.
type Names func(word string) bool

// NewNames returns Names for a fixed list.
func NewNames(names []string) Names {
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	return func(w string) bool { return set[w] }
}

// Scan returns the suspicious text of a definition. A name of others in
// its text is a match when it is a whole word: no letter, digit, '_' or
// '-' right before or after it. The definition's own name never counts
// (the same name on two servers is shadowing, reported elsewhere).
func Scan(def *etdi.Value, others Names) []Match {
	s := &scanner{seen: map[string]bool{}, names: others}
	if n := def.Get("name"); n != nil && n.Kind == etdi.String {
		s.own = n.Str
	}
	s.value("", def)
	return s.out
}

type scanner struct {
	names Names
	own   string
	seen  map[string]bool
	out   []Match
}

func (s *scanner) add(m Match) {
	key := m.Pointer + "\x00" + m.Reason + "\x00" + m.Text
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
	lower := strings.ToLower(str)
	for _, r := range rules {
		if !containsAny(lower, r.hints) || (r.hints2 != nil && !containsAny(lower, r.hints2)) {
			continue
		}
		if loc := r.re.FindStringIndex(str); loc != nil {
			s.add(Match{Pointer: ptr, Text: strings.TrimLeft(str[loc[0]:loc[1]], " \t\n\"'`(/$"), Reason: r.reason})
		}
	}
	if s.names != nil {
		eachWord(str, func(n string) {
			if n != s.own && distinctive(n) && s.names(n) {
				s.add(Match{Pointer: ptr, Text: n, Reason: "the name of a tool of another server"})
			}
		})
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

func containsAny(s string, subs []string) bool {
	return slices.ContainsFunc(subs, func(sub string) bool { return strings.Contains(s, sub) })
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

// eachWord calls fn with the candidate names in s: each maximal run of
// letters, digits, '_', '-' and '.', and every part of such a run between
// dots (dots both join a name like fs.read and end a sentence).
func eachWord(s string, fn func(string)) {
	run := func(r string) {
		if !strings.Contains(r, ".") {
			fn(r)
			return
		}
		// Segment starts and ends, as byte offsets into r.
		var starts, ends []int
		start := 0
		for i := 0; i <= len(r); i++ {
			if i == len(r) || r[i] == '.' {
				if i > start {
					starts, ends = append(starts, start), append(ends, i)
				}
				start = i + 1
			}
		}
		for i := range starts {
			for j := i; j < len(ends); j++ {
				fn(r[starts[i]:ends[j]])
			}
		}
	}
	start := -1
	for i, r := range s {
		if identRune(r) || r == '.' {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			run(s[start:i])
			start = -1
		}
	}
	if start >= 0 {
		run(s[start:])
	}
}
