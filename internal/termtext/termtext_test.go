package termtext

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// Hostile is one of every kind of code point Escape must hide, used by
// the tests here and in cmd/etdi.
const Hostile = "\x00\x07\x08\x1b[31m\x7f\u0085\u009b\u00ad\u034f\u061c\u115f\u180e\u200b\u200c\u200d\u200e\u200f" +
	"\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\u3164\ufe0f\ufeff\ufff9" +
	"\U000e0001\U000e0041\U000e007f\U000e0100"

func TestEscapeHidesEveryHostileCodePoint(t *testing.T) {
	for _, r := range Hostile {
		if r == '[' || r == '3' || r == '1' || r == 'm' {
			continue
		}
		got := Escape("a" + string(r) + "b")
		want := fmt.Sprintf(`a\u{%X}b`, r)
		switch r {
		case '\n':
			want = `a\nb`
		}
		if got != want {
			t.Errorf("Escape(%U) = %q, want %q", r, got, want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"line\nforged", `line\nforged`},
		{"a\tb\rc", `a\tb\rc`},
		{`fake \u{202E} escape`, `fake \\u{202E} escape`},
		{`C:\Users`, `C:\\Users`},
		{"bad\xffbyte", `bad\x{FF}byte`},
		{"\x1b]8;;http://evil\x07", `\u{1B}]8;;http://evil\u{7}`},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Harmless text, including accents, CJK, emoji without variation
// selectors, combining marks and right-to-left scripts, is unchanged.
func TestEscapeKeepsReadableText(t *testing.T) {
	for _, s := range []string{
		"Get the current weather for a city.",
		"Crème brûlée für Größe, naïve café",
		"天気予報を取得します。获取天气。날씨",
		"Sunny ☀ 🌧 🚀 👍",
		"שלום עולם مرحبا", // right-to-left letters are not controls
		"e\u0301 (combining acute)",
		"Reads a file: /home/user/notes.txt, {\"a\": [1, 2]} <b>bold</b> ~ ` ' | $",
	} {
		if got := Escape(s); got != s {
			t.Errorf("Escape(%q) = %q, want it unchanged", s, got)
		}
	}
}

// The output is printable: no Hidden code point and no invalid UTF-8
// survive, and every backslash starts an escape.
func checkEscaped(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("Escape(%q) = %q: not UTF-8", in, out)
	}
	for _, r := range out {
		if Hidden(r) {
			t.Fatalf("Escape(%q) = %q: %U survived", in, out, r)
		}
	}
	for i := 0; i < len(out); i++ {
		if out[i] != '\\' {
			continue
		}
		rest := out[i+1:]
		switch {
		case strings.HasPrefix(rest, `\`), strings.HasPrefix(rest, "n"), strings.HasPrefix(rest, "t"), strings.HasPrefix(rest, "r"):
			i++
		case strings.HasPrefix(rest, "u{"), strings.HasPrefix(rest, "x{"):
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				t.Fatalf("Escape(%q) = %q: unterminated escape", in, out)
			}
			i += end + 1
		default:
			t.Fatalf("Escape(%q) = %q: a backslash that starts no escape at %d", in, out, i)
		}
	}
}

func TestEscapeJSONKeepsTheValue(t *testing.T) {
	in := map[string]string{"name": "x" + Hostile + "y", "description": "Crème 天気 🚀 \\ \"q\""}
	data, _ := json.Marshal(in)
	out := EscapeJSON(data)
	for _, r := range string(out) {
		if Hidden(r) {
			t.Fatalf("EscapeJSON left %U in %s", r, out)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("EscapeJSON made invalid JSON: %v\n%s", err, out)
	}
	if back["name"] != in["name"] || back["description"] != in["description"] {
		t.Fatalf("EscapeJSON changed the value: %q", back)
	}
	if !strings.Contains(string(out), `\u202e`) || !strings.Contains(string(out), `\udb40\udc41`) {
		t.Errorf("EscapeJSON: %s", out)
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "plain", Hostile, `\u{41}`, "\xff\xfe", "天気\u202e🚀\ufe0f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		checkEscaped(t, s, out)
		if Escape(s) != out {
			t.Fatal("not deterministic")
		}
	})
}

func BenchmarkEscape(b *testing.B) {
	plain := strings.Repeat("Get the current weather for a city, in metric or imperial units. ", 16)
	hostile := strings.Repeat("Get the weather\u202e\u200b ", 64)
	b.Run("plain", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			Escape(plain)
		}
	})
	b.Run("hostile", func(b *testing.B) {
		b.SetBytes(int64(len(hostile)))
		for b.Loop() {
			Escape(hostile)
		}
	})
}

// Code points that render as a blank without being white space, private
// use code points (drawn by whatever font maps them) and unassigned ones
// (drawn as anything, or nothing, by a later font) are escaped: a name
// cannot carry padding or a look of its own choosing.
func TestEscapeHidesBlanksPrivateUseAndUnassigned(t *testing.T) {
	for _, r := range []rune{
		0x2800, 0x3164, 0xFFA0, 0x115F, 0x1160, // blanks
		0xE000, 0xF8FF, 0xF0000, 0x10FFFD, // private use
		0x0378, 0x0530, 0xFFFE, 0xFFFF, 0x1FFFE, 0x10FFFF, 0x2FFFF, // unassigned, noncharacters
	} {
		want := fmt.Sprintf(`get\u{%X}weather`, r)
		if got := Escape("get" + string(r) + "weather"); got != want {
			t.Errorf("Escape(%U) = %q, want %q", r, got, want)
		}
		if j := string(EscapeJSON([]byte(`"` + string(r) + `"`))); strings.ContainsRune(j, r) {
			t.Errorf("EscapeJSON(%U) = %q, kept as is", r, j)
		}
	}
	for _, s := range []string{"Ⅷ ½ ∑ ≤ ← ✓ ™ € ¥ ° ‰", "get weather", "get\u00a0weather", "ẞ ǅ ﬁ"} {
		if got := Escape(s); got != s {
			t.Errorf("Escape(%q) = %q, want it unchanged", s, got)
		}
	}
}
