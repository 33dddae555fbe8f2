package strictjson

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Canonicalize parses data under the strict profile and returns its
// RFC 8785 (JSON Canonicalization Scheme) serialization.
func Canonicalize(data []byte) ([]byte, error) {
	v, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return AppendCanonical(nil, v), nil
}

// AppendCanonical appends the RFC 8785 serialization of v to b: no
// insignificant whitespace, object members sorted by the UTF-16 code units of
// their names, strings with the minimal escapes, numbers in the ECMAScript
// Number.prototype.toString form.
func AppendCanonical(b []byte, v *Value) []byte {
	switch v.Kind {
	case Null:
		return append(b, "null"...)
	case Bool:
		if v.Bool {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case Number:
		return appendES6Number(b, v.Num)
	case String:
		return appendCanonicalString(b, v.Str)
	case Array:
		b = append(b, '[')
		for i, e := range v.Elems {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendCanonical(b, e)
		}
		return append(b, ']')
	case raw:
		return append(b, v.Str...)
	case Object:
		ms := sortedMembers(v.Members)
		b = append(b, '{')
		for i, m := range ms {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonicalString(b, m.Name)
			b = append(b, ':')
			b = AppendCanonical(b, m.Value)
		}
		return append(b, '}')
	}
	panic("etdi: invalid JSON value kind")
}

// sortedMembers returns the members ordered as RFC 8785 §3.2.3 requires:
// by the UTF-16 code units of the names, compared as unsigned integers.
func sortedMembers(ms []Member) []Member {
	if slices.IsSortedFunc(ms, func(a, b Member) int { return compareUTF16(a.Name, b.Name) }) {
		return ms // already in canonical order, as in every etdi payload
	}
	ascii := true
	for _, m := range ms {
		for i := 0; i < len(m.Name); i++ {
			if m.Name[i] >= utf8.RuneSelf {
				ascii = false
				break
			}
		}
	}
	out := slices.Clone(ms)
	if ascii {
		// For ASCII names, byte order and UTF-16 order agree.
		slices.SortFunc(out, func(a, b Member) int { return compareStrings(a.Name, b.Name) })
		return out
	}
	slices.SortFunc(out, func(a, b Member) int { return compareUTF16(a.Name, b.Name) })
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareUTF16 compares two strings by their UTF-16 code units without
// converting them. UTF-8 byte order equals code point order, which differs
// from UTF-16 order only for code points above U+FFFF (surrogate pairs,
// 0xD800-0xDBFF) against U+E000-U+FFFF.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return compareUnits(ra, rb)
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case a == "" && b == "":
		return 0
	case a == "":
		return -1
	}
	return 1
}

// compareUnits compares the first UTF-16 code unit of two different runes,
// falling back to the second unit of surrogate pairs.
func compareUnits(ra, rb rune) int {
	ua, ub := firstUnits(ra), firstUnits(rb)
	for i := 0; i < 2; i++ {
		if ua[i] != ub[i] {
			if ua[i] < ub[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func firstUnits(r rune) [2]uint16 {
	if r >= 0x10000 {
		r1, r2 := utf16.EncodeRune(r)
		return [2]uint16{uint16(r1), uint16(r2)}
	}
	return [2]uint16{uint16(r), 0}
}

func appendCanonicalString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendES6Number formats f as ECMAScript's Number.prototype.toString does
// (ECMA-262 §6.1.6.1.20), which RFC 8785 §3.2.2.3 adopts. f must be finite.
func appendES6Number(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0') // also for -0
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		panic("etdi: non-finite number")
	}
	if f < 0 {
		b = append(b, '-')
		f = -f
	}
	// Shortest round-trip digits and exponent: d.ddddde±x.
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	mant, exp := e, 0
	for i, c := range e {
		if c == 'e' {
			mant = e[:i]
			x, _ := strconv.Atoi(string(e[i+1:]))
			exp = x
			break
		}
	}
	digits := make([]byte, 0, len(mant))
	for _, c := range mant {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	k := len(digits)
	n := exp + 1 // value = 0.digits × 10^n
	switch {
	case k <= n && n <= 21:
		b = append(b, digits...)
		for i := 0; i < n-k; i++ {
			b = append(b, '0')
		}
	case 0 < n && n <= 21:
		b = append(b, digits[:n]...)
		b = append(b, '.')
		b = append(b, digits[n:]...)
	case -6 < n && n <= 0:
		b = append(b, '0', '.')
		for i := 0; i < -n; i++ {
			b = append(b, '0')
		}
		b = append(b, digits...)
	default:
		b = append(b, digits[0])
		if k > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		if n-1 >= 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, int64(n-1), 10)
	}
	return b
}

// AppendIndent appends v as indented JSON, keeping object members in
// document order (unlike [AppendCanonical]), for files people edit.
func AppendIndent(b []byte, v *Value, prefix, indent string) []byte {
	return appendIndent(b, v, prefix, indent, 0)
}

func appendIndent(b []byte, v *Value, prefix, indent string, depth int) []byte {
	nl := func(d int) {
		b = append(b, '\n')
		b = append(b, prefix...)
		for i := 0; i < d; i++ {
			b = append(b, indent...)
		}
	}
	switch v.Kind {
	case Array:
		if len(v.Elems) == 0 {
			return append(b, "[]"...)
		}
		b = append(b, '[')
		for i, e := range v.Elems {
			if i > 0 {
				b = append(b, ',')
			}
			nl(depth + 1)
			b = appendIndent(b, e, prefix, indent, depth+1)
		}
		nl(depth)
		return append(b, ']')
	case Object:
		if len(v.Members) == 0 {
			return append(b, "{}"...)
		}
		b = append(b, '{')
		for i, m := range v.Members {
			if i > 0 {
				b = append(b, ',')
			}
			nl(depth + 1)
			b = appendCanonicalString(b, m.Name)
			b = append(b, ": "...)
			b = appendIndent(b, m.Value, prefix, indent, depth+1)
		}
		nl(depth)
		return append(b, '}')
	}
	return AppendCanonical(b, v)
}

// Equal reports whether a and b are the same JSON value (RFC 8785 equal).
func Equal(a, b *Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case Null:
		return true
	case Bool:
		return a.Bool == b.Bool
	case Number:
		return a.Num == b.Num
	case String:
		return a.Str == b.Str
	case Array:
		if len(a.Elems) != len(b.Elems) {
			return false
		}
		for i := range a.Elems {
			if !Equal(a.Elems[i], b.Elems[i]) {
				return false
			}
		}
		return true
	case Object:
		if len(a.Members) != len(b.Members) {
			return false
		}
		for _, m := range a.Members {
			o := b.Get(m.Name)
			if o == nil || !Equal(m.Value, o) {
				return false
			}
		}
		return true
	}
	return false
}
