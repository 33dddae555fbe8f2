package policy

import (
	"strings"
	"testing"
)

// ShowArguments says whether the summary shows the arguments whole, and
// escapes whatever it shows.
func TestShowArguments(t *testing.T) {
	pad := ""
	for i := range 16 {
		pad += `"a` + string(rune('a'+i)) + `":0,`
	}
	for _, c := range []struct {
		args  string
		whole bool
		has   []string
	}{
		{``, true, []string{"(no arguments)"}},
		{`{}`, true, []string{"(no arguments)"}},
		{`{"b":1,"a":"x"}`, true, []string{"a: \"x\"\nb: 1"}},
		{`{"path":"/tmp/\u001b[2J\u202e"}`, true, []string{`path: "/tmp/\u{1B}[2J\u{202E}"`}},
		{`{"path":"a\", b: \"c"}`, true, []string{`path: "a\", b: \"c"`}},
		{`{"path":"a\\b"}`, true, []string{`path: "a\\b"`}},
		{`{"o":{"k":"\u200b"}}`, true, []string{`o: {"k":"\u{200B}"}`}},
		{`["\u202e",1]`, true, []string{`(not an object) ["\u{202E}",1]`}},
		{`"` + strings.Repeat("x", 200) + `"`, false, []string{"(not an object) \"xxx", "..."}},
		{`{"p":"` + strings.Repeat("x", 95) + `"}`, false, []string{"..."}},
		{`{"p":"` + strings.Repeat("x", 94) + `"}`, true, nil},
		{`{"` + strings.Repeat("n", 97) + `":1}`, false, []string{"...: 1"}},
		{`{` + pad + `"z":1}`, false, []string{"... and 1 more"}},
		{`{` + strings.TrimSuffix(pad, ",") + `}`, true, nil},
		{`{"a":1,"a":2}`, false, []string{"(13 bytes that are not JSON)"}},
		{`{"n":9007199254740993}`, false, []string{"not JSON"}},
	} {
		got, whole := ShowArguments([]byte(c.args))
		if whole != c.whole {
			t.Errorf("%s: whole %v, want %v:\n%s", c.args, whole, c.whole, got)
		}
		for _, h := range c.has {
			if !strings.Contains(got, h) {
				t.Errorf("%s: summary lacks %q:\n%s", c.args, h, got)
			}
		}
		if strings.ContainsAny(got, "\x1b\u202e\u200b\t\r") || strings.Count(got, "\n") > 17 || len(got) > summaryTotal+64 {
			t.Errorf("%s: summary %q", c.args, got)
		}
		if SummarizeArguments([]byte(c.args)) != got {
			t.Errorf("%s: SummarizeArguments differs", c.args)
		}
	}
	// Past 2 KiB in all.
	var b strings.Builder
	b.WriteString("{")
	for i := range 15 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"` + string(rune('a'+i)) + strings.Repeat("n", 80) + `":"` + strings.Repeat("v", 90) + `"`)
	}
	b.WriteString("}")
	if got, whole := ShowArguments([]byte(b.String())); whole || !strings.Contains(got, "more") {
		t.Errorf("2 KiB: whole %v:\n%s", whole, got)
	}
}
