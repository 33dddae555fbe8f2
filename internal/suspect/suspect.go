// Package suspect finds text in a tool definition that is aimed at the
// model rather than the person approving it (docs/output.md#escaping-untrusted-text): characters a
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
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/etdi-dev/etdi/internal/confusable"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/strictjson"
	"golang.org/x/text/unicode/norm"
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

// rules are tried on the folded form of a string (see fold) only when
// its lower-case form holds one of their hints (and, if set, also one of
// their second hints), which keeps scanning thousands of harmless
// definitions cheap. A few words may stand between the key words.
//
// The expressions are compiled on the first scan, not when etdi starts:
// most commands never scan.
var rules = sync.OnceValue(func() []rule {
	return []rule{
		{"an instruction tag", []string{"<"}, nil, regexp.MustCompile(`(?i)<\s*/?\s*(important|system|instructions?|secret|hidden|admin|critical|prompt)(\s[^<>]{0,200})?\s*>`)},
		{"an instruction to ignore other instructions", []string{"ignore", "disregard", "forget", "override"}, nil, regexp.MustCompile(`(?i)\b(ignore|disregard|forget|override)\s+([\w']+\s+){0,4}?(previous|prior|above|earlier|preceding|other|system)\s+([\w']+\s+){0,2}?(instructions?|prompts?|rules|directions|guidelines)\b`)},
		{"an instruction to keep the user uninformed", []string{"user"}, []string{"not", "n't", "never", "without", "hide", "conceal", "keep"}, regexp.MustCompile(`(?i)\b((do\s+not|don'?t|never|must\s+not)\s+(tell|inform|mention\s+(this\s+|it\s+)?to|reveal\s+(this\s+|it\s+)?to|notify|alert|show|let)\s+the\s+user|without\s+(telling|informing|notifying|alerting|asking)\s+the\s+user|(hide|conceal|keep)\s+(this|it)\s+(from|secret\s+from)\s+the\s+user|the\s+user\s+(must|should)\s+not\s+(know|see|be\s+told))`)},
		{pathRule, []string{"ssh", "id_", ".env", "credentials", ".netrc", ".npmrc", ".pgpass", ".docker", ".kube", "/etc/", ".cursor", "claude_desktop", ".gnupg", ".aws", ".azure", "gcloud", ".config/gh"}, nil,
			regexp.MustCompile(`(?i)((~|\$home|\$\{home\}|%userprofile%)[/\\]\.(ssh|aws|azure|gnupg|kube|docker)\b|~/\.cursor/|\.config/(gcloud|gh)\b|claude_desktop_config\.json|\.gnupg\b|\.ssh/|\bid_(rsa|dsa|ecdsa|ed25519)\b|(^|[^\w.$])\.env\b|\.aws/(credentials|config)\b|\.azure/|\bcredentials\.(json|ya?ml|toml|txt|csv|db)\b|\.git-credentials|(^|[^\w])\.netrc\b|(^|[^\w])\.npmrc\b|\.pgpass\b|\.docker/config\.json|\.kube/config|/etc/(passwd|shadow)\b)`)},
	}
})

// rule is one of rules.
type rule struct {
	reason string
	hints  []string
	hints2 []string
	re     *regexp.Regexp
}

const pathRule = "a path to secrets"

// templateEnv follows a .env that names a template of one, not secrets.
var templateEnv = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\.(example|sample|template|dist|defaults?)\b`) })

// ScanBudget bounds the bytes of text (strings and member names) Scan
// reads in one definition. Past it, Scan stops and says so with a match
// whose Reason starts with "too long to scan fully".
const ScanBudget = 4 << 20

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
func Scan(def *strictjson.Value, others Names) []Match {
	s := &scanner{seen: map[string]bool{}, names: others, looked: map[string]bool{}, budget: ScanBudget}
	if n := def.Get("name"); n != nil && n.Kind == strictjson.String {
		s.own = n.Str
	}
	s.value("", def)
	return s.out
}

type scanner struct {
	names  Names
	own    string
	seen   map[string]bool
	looked map[string]bool // words already looked up in names
	out    []Match
	budget int  // bytes of text left to scan
	over   bool // the budget ran out
}

func (s *scanner) add(m Match) {
	key := m.Pointer + "\x00" + m.Reason + "\x00" + m.Text
	if len(s.out) >= MaxMatches || s.seen[key] {
		return
	}
	s.seen[key] = true
	s.out = append(s.out, m)
}

func (s *scanner) value(ptr string, v *strictjson.Value) {
	switch v.Kind {
	case strictjson.String:
		s.text(ptr, v.Str)
	case strictjson.Array:
		for i, e := range v.Elems {
			s.value(ptr+"/"+strconv.Itoa(i), e)
		}
	case strictjson.Object:
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
	if s.over || str == "" {
		return
	}
	if len(str) > s.budget {
		s.over = true
		cut := s.budget
		for cut > 0 && !utf8.RuneStart(str[cut]) {
			cut--
		}
		shown, _ := cutRunes(str, 40)
		// Past MaxMatches too: what was not scanned is never silent.
		s.out = append(s.out, Match{Pointer: ptr, Text: shown,
			Reason: fmt.Sprintf("too long to scan fully: the definition holds more than %d bytes of text; scanned up to byte %d of this string of %d bytes", ScanBudget, cut, len(str))})
		str = str[:cut]
	}
	s.budget -= len(str)
	if len(s.out) >= MaxMatches {
		return
	}
	if m, ok := hidden(str); ok {
		m.Pointer = ptr
		s.add(m)
	}
	f := fold(str)
	lower := strings.ToLower(f.text)
	for _, r := range rules() {
		if !containsAny(lower, r.hints) || (r.hints2 != nil && !containsAny(lower, r.hints2)) {
			continue
		}
		for _, loc := range r.re.FindAllStringIndex(f.text, 4) {
			if r.reason == pathRule && templateEnv().MatchString(f.text[loc[1]:]) {
				continue // .env.example lists names, not secrets
			}
			s.add(Match{Pointer: ptr, Text: strings.TrimLeft(f.original(str, loc[0], loc[1]), " \t\n\"'`(/$"), Reason: r.reason})
			break
		}
	}
	if s.names != nil {
		eachWord(str, func(n string) {
			if n == s.own || s.looked[n] || !distinctive(n) {
				return
			}
			s.looked[n] = true
			if s.names(n) {
				s.add(Match{Pointer: ptr, Text: n, Reason: "the name of a tool of another server"})
			}
		})
	}
}

// cutRunes returns the first n code points of s and whether it cut.
func cutRunes(s string, n int) (string, bool) {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i], i < len(s)
}

// folded is a string as the rules read it: compatibility forms folded
// (NFKC: fullwidth ＜ is <), letters of other scripts that look like
// ASCII replaced by it (the UTS #39 prototype: Cyrillic і is i), quotes
// and apostrophes folded to " and ', invisible code points removed, and
// every run of white space or blanks one space. at maps each byte of
// text to the offset of the code point of the original it came from;
// nil when text is the original (ASCII needs no folding: the rules
// match its white space with \s).
type folded struct {
	text string
	at   []int32
}

func fold(str string) folded {
	ascii := true
	for i := 0; i < len(str); i++ {
		if str[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return folded{text: str}
	}
	b := make([]byte, 0, len(str))
	at := make([]int32, 0, len(str))
	emit := func(s string, from int) {
		for i := 0; i < len(s); i++ {
			b = append(b, s[i])
			at = append(at, int32(from))
		}
	}
	var tmp [utf8.UTFMax]byte
	for i, r := range str {
		switch {
		case r < 0x80 && !unicode.IsSpace(r):
			b = append(b, byte(r))
			at = append(at, int32(i))
		case confusable.Blank(r):
			if len(b) == 0 || b[len(b)-1] != ' ' {
				emit(" ", i)
			}
		case confusable.Ignorable(r):
		case strings.ContainsRune("\u201C\u201D\u201E\u201F\u2033\u2036\u00AB\u00BB\u02BA\u02DD\u02EE\u3003\uFF02", r):
			emit(`"`, i)
		default:
			n := utf8.EncodeRune(tmp[:], r)
			for _, c := range norm.NFKC.String(string(tmp[:n])) {
				if c < 0x80 {
					emit(string(c), i)
				} else if p, ok := confusable.ASCII(c); ok {
					emit(p, i)
				} else {
					emit(string(c), i)
				}
			}
		}
	}
	return folded{text: string(b), at: at}
}

// original returns the text of str that f.text[lo:hi] came from.
func (f folded) original(str string, lo, hi int) string {
	if f.at == nil {
		return str[lo:hi]
	}
	if hi <= lo {
		return ""
	}
	start, last := int(f.at[lo]), int(f.at[hi-1])
	_, size := utf8.DecodeRuneInString(str[last:])
	return str[start : last+size]
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
// letters, digits, '_', '-' and '.', without the dots at either end
// (a sentence ends with one), and, when that run still holds a dot, each
// part between its dots (dots both join a name like fs.read and end a
// sentence). The words passed add up to at most twice the length of s.
func eachWord(s string, fn func(string)) {
	run := func(r string) {
		r = strings.Trim(r, ".")
		if r == "" {
			return
		}
		fn(r)
		if !strings.Contains(r, ".") {
			return
		}
		for part := range strings.SplitSeq(r, ".") {
			if part != "" {
				fn(part)
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
