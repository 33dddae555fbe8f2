// Package confusable tells whether two tool names look alike: the same
// skeleton, in the sense of Unicode Technical Standard #39, restricted to
// what matters for identifiers read by people and models.
//
// Skeleton applies, in order: NFKC (folds fullwidth and mathematical
// letters), removal of invisible characters (zero-width spaces and joiners,
// bidirectional controls, variation selectors, tags, soft hyphen), a table
// of characters that look like ASCII letters and digits (Cyrillic, Greek,
// Armenian and Latin look-alikes from the Unicode confusables data, and the
// ASCII pairs 0/O, 1/I/l/|), lower-casing, the multi-letter look-alikes
// rn/m and vv/w, and folding of the separators '-', '.' and ' ' to '_'.
package confusable

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// lookalike maps characters to the ASCII character they are confused with.
var lookalike = map[rune]rune{
	// Cyrillic lower case.
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'о': 'o', 'р': 'p', 'с': 'c', 'у': 'y', 'х': 'x',
	'ѕ': 's', 'і': 'i', 'ї': 'i', 'ј': 'j', 'һ': 'h', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'ӏ': 'l',
	'ɡ': 'g', 'ь': 'b', 'п': 'n', 'г': 'r', 'к': 'k', 'м': 'm', 'н': 'h', 'т': 't',
	// Cyrillic upper case.
	'А': 'A', 'В': 'B', 'Е': 'E', 'К': 'K', 'М': 'M', 'Н': 'H', 'О': 'O', 'Р': 'P', 'С': 'C',
	'Т': 'T', 'Х': 'X', 'У': 'Y', 'І': 'l', 'Ј': 'J', 'Ѕ': 'S', 'Ԛ': 'Q', 'Ԝ': 'W', 'Һ': 'h', 'Ӏ': 'l',
	// Greek.
	'α': 'a', 'ο': 'o', 'ν': 'v', 'ρ': 'p', 'ι': 'i', 'υ': 'u', 'χ': 'x', 'γ': 'y', 'κ': 'k',
	'τ': 't', 'ε': 'e', 'ϲ': 'c', 'ϳ': 'j', 'ς': 's',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'l', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N',
	'Ο': 'O', 'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X', 'Ϲ': 'C',
	// Armenian.
	'օ': 'o', 'ս': 'u', 'հ': 'h', 'ո': 'n', 'ց': 'g', 'զ': 'q', 'ւ': 'l', 'Տ': 'S', 'Օ': 'O',
	// Latin look-alikes.
	'ı': 'i', 'ɑ': 'a', 'ɩ': 'i', 'ʟ': 'l', 'ɪ': 'i', 'ᴏ': 'o', 'ᴄ': 'c', 'ᴠ': 'v', 'ᴡ': 'w', 'ᴢ': 'z',
	'ƅ': 'b', 'ɗ': 'd', 'ℓ': 'l', 'ǀ': 'l',
	// ASCII pairs.
	'0': 'o', '1': 'l', 'I': 'l', '|': 'l',
}

// invisible reports characters that render as nothing.
func invisible(r rune) bool {
	switch {
	case r == 0x00AD, r == 0x034F, r == 0x061C, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5,
		r == 0x180E, r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x206F,
		r == 0x3164, r >= 0xFE00 && r <= 0xFE0F, r == 0xFEFF, r == 0xFFA0, r >= 0xE0000 && r <= 0xE0FFF:
		return true
	}
	return false
}

// Skeleton returns the form under which look-alike names are equal.
func Skeleton(s string) string {
	s = norm.NFKC.String(s)
	var b strings.Builder
	for _, r := range s {
		if invisible(r) {
			continue
		}
		if a, ok := lookalike[r]; ok {
			r = a
		}
		r = unicode.ToLower(r)
		if a, ok := lookalike[r]; ok { // a lower-cased letter may map again (I -> i is not wanted: I was mapped first)
			r = a
		}
		switch r {
		case '-', '.', ' ':
			r = '_'
		}
		b.WriteRune(r)
	}
	out := b.String()
	out = strings.ReplaceAll(out, "rn", "m")
	out = strings.ReplaceAll(out, "vv", "w")
	return out
}

// Confusable reports whether a and b are different names that look alike.
func Confusable(a, b string) bool {
	return a != b && Skeleton(a) == Skeleton(b)
}

var scripts = []struct {
	name  string
	table *unicode.RangeTable
}{
	{"Latin", unicode.Latin}, {"Cyrillic", unicode.Cyrillic}, {"Greek", unicode.Greek},
	{"Armenian", unicode.Armenian}, {"Cherokee", unicode.Cherokee}, {"Georgian", unicode.Georgian},
	{"Han", unicode.Han}, {"Arabic", unicode.Arabic}, {"Hebrew", unicode.Hebrew},
}

// Scripts returns the scripts of the letters in s, in order of appearance.
func Scripts(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range s {
		if !unicode.IsLetter(r) {
			continue
		}
		name := "Other"
		for _, sc := range scripts {
			if unicode.Is(sc.table, r) {
				name = sc.name
				break
			}
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}

// MixedScript reports whether s mixes letters of several scripts, as
// "get_weathеr" does with a Cyrillic е.
func MixedScript(s string) bool { return len(Scripts(s)) > 1 }

// Invisible reports whether s contains characters that render as nothing.
func Invisible(s string) bool {
	for _, r := range s {
		if invisible(r) {
			return true
		}
	}
	return false
}
