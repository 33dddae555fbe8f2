// Package termtext makes text that a server controls safe to show on a
// terminal (docs/output.md#escaping-untrusted-text). Escape is the one function every human output
// path of etdi passes untrusted text through; EscapeJSON is the same
// rule for JSON shown to a person, written with JSON's own escapes so the
// document keeps its value.
//
// # Format
//
// Hidden reports the code points that are escaped: C0 controls, DEL, C1
// controls, the bidirectional controls, zero-width and other default
// ignorable code points, the TAG block, variation selectors, the line and
// paragraph separators, every other format character (Unicode category
// Cf), blanks that are not white space (U+2800 BRAILLE PATTERN BLANK,
// the Hangul fillers U+115F, U+1160, U+3164, U+FFA0), private-use
// code points (Co) and code points unassigned in the Unicode tables of
// Go's unicode package (Cn, noncharacters included). Escape writes them as \u{HEX} (upper-case hex, no leading
// zeros), a byte that is not UTF-8 as \x{HEX}, and a backslash as \\, so
// every backslash in its output begins an escape and no text can pass
// for one. Tab, line feed and carriage return are escaped too (\t, \n,
// \r): a server cannot start a line of etdi's output. Everything else,
// accents, CJK and emoji without variation selectors, is kept as is.
//
// # Example
//
//	Escape("get\u202Eweather\\") == `get\u{202E}weather\\`
package termtext

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hidden reports whether r is escaped: it controls the terminal, changes
// the order or look of nearby text, or renders as nothing.
func Hidden(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7F && r <= 0x9F: // C0, DEL, C1
		return true
	case r < 0xA0:
		return false
	case r == 0x00AD, r == 0x034F, r == 0x061C, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5,
		r == 0x2800,                // braille pattern blank: renders as a space, is not one
		r >= 0x180B && r <= 0x180F, // Mongolian variation selectors and vowel separator
		r >= 0x200B && r <= 0x200F, // zero-width space, joiners, LRM, RLM
		r >= 0x2028 && r <= 0x202E, // line and paragraph separators, bidi embeddings and overrides
		r >= 0x2060 && r <= 0x206F, // word joiner, invisible operators, bidi isolates, deprecated formats
		r == 0x3164, r >= 0xFE00 && r <= 0xFE0F, r == 0xFEFF, r == 0xFFA0,
		r >= 0xFFF0 && r <= 0xFFFB, // unassigned specials and interlinear annotation
		r >= 0x1BCA0 && r <= 0x1BCA3, r >= 0x1D173 && r <= 0x1D17A,
		r >= 0xE0000 && r <= 0xE0FFF: // TAG block, variation selectors supplement
		return true
	}
	if unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) {
		return true
	}
	if unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Zs) {
		return false
	}
	// Format, separators, default ignorable, private use (Co) and every
	// code point unassigned in Go's tables (Cn, noncharacters included):
	// none has a look a reader can rely on.
	return true
}

// Escape returns s with every Hidden code point, every byte that is not
// UTF-8 and every backslash written visibly (see the package doc).
func Escape(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == '\\' || Hidden(r) || (r == utf8.RuneError && n == 1) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x{` + strings.ToUpper(strconv.FormatUint(uint64(s[i]), 16)) + "}")
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case Hidden(r):
			b.WriteString(`\u{` + strings.ToUpper(strconv.FormatInt(int64(r), 16)) + "}")
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// EscapeJSON returns the JSON text data with every Hidden code point
// written as a JSON \uXXXX escape (a surrogate pair above U+FFFF). Such
// code points can only occur inside strings, where the escape denotes
// the same character, so the result is the same JSON value. data must be
// valid UTF-8; a byte that is not is written as \ufffd.
func EscapeJSON(data []byte) []byte {
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = append(out, `\ufffd`...)
		case Hidden(r) && r > 0xFFFF:
			r -= 0x10000
			out = appendU(appendU(out, 0xD800+(r>>10)), 0xDC00+(r&0x3FF))
		case Hidden(r) && r >= 0x20:
			out = appendU(out, r)
		default:
			// Controls below 0x20 cannot occur in valid JSON text
			// except as whitespace between tokens.
			out = append(out, data[i:i+n]...)
		}
		i += n
	}
	return out
}

func appendU(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF])
}

// ShellQuote quotes s for a POSIX shell when it needs it, for a command a
// person copies: letters, digits and -_./:=@+, stay as they are. It does
// not escape: apply Escape to the command it is part of.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == ':' || r == '=' || r == '@' || r == '+' || r == ',' ||
			(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
