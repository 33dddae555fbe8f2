// Package confusable tells whether two tool names look alike: the same
// skeleton, in the sense of Unicode Technical Standard #39, with folds of
// its own for identifiers read by people and models (docs/check.md#check-against-pins).
//
// Skeleton applies, in order:
//
//  0. every blank (white space, U+2800 BRAILLE PATTERN BLANK, the Hangul
//     fillers U+115F, U+1160, U+3164, U+FFA0) becomes a space;
//  1. removal of every Default_Ignorable_Code_Point (zero-width spaces and
//     joiners, bidirectional controls, variation selectors including the
//     Mongolian ones, tags, soft hyphen, fillers);
//  2. NFKC (folds fullwidth and compatibility forms the table lacks, such
//     as fullwidth t), NFD, each character replaced by its prototype from
//     the UTS #39 confusables table (generated from confusables.txt,
//     UnicodeVersion), lower case; repeated until nothing changes;
//  3. removal of white space and blanks at either end (a trailing
//     no-break space);
//  4. etdi's folds: every dash (general category Pd), every white space
//     character (no-break spaces included), '.' and '_' become '_'; "vv"
//     becomes "w". (The table itself maps m to rn, 0 to O, 1, I and | to l.)
//
// The tables are generated: go generate runs gen.go over the Unicode data
// files committed beside it.
package confusable

//go:generate go run gen.go

import (
	"sort"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// prototype returns the UTS #39 prototype of r, if r has one.
func prototype(r rune) (string, bool) {
	i := sort.Search(len(prototypes), func(i int) bool { return prototypes[i].r >= r })
	if i < len(prototypes) && prototypes[i].r == r {
		return prototypes[i].p, true
	}
	return "", false
}

// invisible reports characters that render as nothing: the
// Default_Ignorable_Code_Point property.
func invisible(r rune) bool { return unicode.Is(defaultIgnorable, r) }

// blank reports white space and the characters that render as a blank
// without being white space: U+2800 BRAILLE PATTERN BLANK and the
// Hangul fillers U+115F, U+1160, U+3164 and U+FFA0 (default ignorable,
// yet drawn as wide as a letter).
func blank(r rune) bool {
	switch r {
	case 0x2800, 0x115F, 0x1160, 0x3164, 0xFFA0:
		return true
	}
	return unicode.Is(unicode.White_Space, r)
}

// separator reports characters folded to '_'.
func separator(r rune) bool {
	return r == '_' || r == '.' || unicode.Is(unicode.Pd, r) || blank(r)
}

// Ignorable reports whether r renders as nothing
// (Default_Ignorable_Code_Point).
func Ignorable(r rune) bool { return invisible(r) }

// Blank reports whether r is white space or renders as a blank.
func Blank(r rune) bool { return blank(r) }

// ASCII returns the UTS #39 prototype of r when it is ASCII, as the
// prototype of Cyrillic і is i and that of U+2019 is an apostrophe.
func ASCII(r rune) (string, bool) {
	p, ok := prototype(r)
	if !ok {
		return "", false
	}
	for i := 0; i < len(p); i++ {
		if p[i] >= 0x80 {
			return "", false
		}
	}
	return p, true
}

// Skeleton returns the form under which look-alike names are equal.
func Skeleton(s string) string {
	s = dropInvisible(strings.Map(func(r rune) rune {
		if blank(r) {
			return ' '
		}
		return r
	}, s))
	for range 8 {
		var b strings.Builder
		for _, r := range norm.NFD.String(norm.NFKC.String(s)) {
			if p, ok := prototype(r); ok {
				b.WriteString(p)
			} else {
				b.WriteRune(r)
			}
		}
		next := strings.ToLower(b.String())
		if next == s {
			break
		}
		s = next
	}
	s = strings.TrimFunc(dropInvisible(s), blank)
	s = strings.Map(func(r rune) rune {
		if separator(r) {
			return '_'
		}
		return r
	}, s)
	return strings.ReplaceAll(s, "vv", "w")
}

func dropInvisible(s string) string {
	return strings.Map(func(r rune) rune {
		if invisible(r) {
			return -1
		}
		return r
	}, s)
}

// Confusable reports whether a and b are different names that look alike.
func Confusable(a, b string) bool {
	return a != b && Skeleton(a) == Skeleton(b)
}

// scriptNames lists unicode.Scripts by name, Common and Inherited (shared
// by every script) left out.
var scriptNames = func() []string {
	var out []string
	for name := range unicode.Scripts {
		if name != "Common" && name != "Inherited" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	// Latin first: most names are Latin.
	for i, n := range out {
		if n == "Latin" {
			copy(out[1:i+1], out[:i])
			out[0] = "Latin"
		}
	}
	return out
}()

// Scripts returns the scripts of the letters in s, in order of appearance.
func Scripts(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range s {
		if !unicode.IsLetter(r) {
			continue
		}
		name := "Other"
		for _, sc := range scriptNames {
			if unicode.Is(unicode.Scripts[sc], r) {
				name = sc
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

// Invisible reports whether s contains characters that render as nothing
// (Default_Ignorable_Code_Point).
func Invisible(s string) bool {
	for _, r := range s {
		if invisible(r) {
			return true
		}
	}
	return false
}
