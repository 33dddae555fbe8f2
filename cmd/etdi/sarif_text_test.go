package main

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/termtext"
)

// hostileTexts are names and messages a server or a repository chooses,
// aimed at the person who reads code scanning's alert.
var hostileTexts = []string{
	"[Approved by your security team](https://evil.example/approve)",
	"![logo](https://evil.example/pixel.png)",
	`\[escaped\](https://evil.example/)`,
	`\\[double\\](https://evil.example/)`,
	"get\u202Eexe.tahw\u202C_weather",
	"a\u2066b\u2069c\u200Bd\u061Ce",
	"line one\nSECURITY: all clear\r\n",
	"`code` and ``more``",
	"<img src=x onerror=alert(1)> <https://evil.example>",
	"{0} {{1}} } {",
	"[see](0) [here](sarif:/runs/0/results/1)",
	"\x1b[31mred\x1b[0m",
	"plain get_weather of acme:weather (policy: warn)",
}

// sarifSafe fails unless text is a SARIF plain text message in which no
// embedded link, image, code span, autolink or HTML can be formed, no
// placeholder stands, and nothing hides or reorders text; and unless
// undoing the escapes gives termtext.Escape(orig).
func sarifSafe(t *testing.T, text, orig string) {
	t.Helper()
	if !utf8.ValidString(text) {
		t.Fatalf("%q: not UTF-8", text)
	}
	var plain strings.Builder
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if termtext.Hidden(r) {
			t.Fatalf("%q: U+%04X is shown raw", text, r)
		}
		switch r {
		case '\\':
			if i+1 < len(rs) && strings.ContainsRune("[]()`<>", rs[i+1]) {
				plain.WriteRune(rs[i+1])
				i++
				continue
			}
		case '[', ']', '(', ')', '`', '<', '>':
			t.Fatalf("%q: %q at %d is not escaped", text, r, i)
		case '{', '}':
			if i+1 >= len(rs) || rs[i+1] != r {
				t.Fatalf("%q: a single %q at %d reads as a placeholder", text, r, i)
			}
			i++
		}
		plain.WriteRune(r)
	}
	if want := termtext.Escape(orig); plain.String() != want {
		t.Fatalf("unescaped %q, want %q", plain.String(), want)
	}
}

// Messages of results carry text of the server (tool names, definitions)
// and of the repository (entry names, errors): each is escaped for code
// scanning, in the message and in the logical locations, while the
// finding in properties keeps its exact text for programs.
func TestSARIFHostileText(t *testing.T) {
	for _, h := range hostileTexts {
		sarifSafe(t, sarifText(h), h)
		out := &checkOutput{Servers: []*checkReport{
			{Target: "entry " + h, Server: "unsigned:x", Findings: []finding.Finding{{Kind: finding.NewTool, Severity: finding.Error, Tool: h, Message: "tool " + h + " is new"}}},
			{Target: "entry " + h, Error: "did not start: " + h},
		}}
		doc := sarifLog(out, sarifOptions{root: "/", policy: "trust.json"})
		res := doc.Runs[0].Results
		if len(res) != 2 {
			t.Fatalf("%d results", len(res))
		}
		sarifSafe(t, res[0].Message.Text, "tool "+h+" is new")
		sarifSafe(t, res[1].Message.Text, "entry "+h+": did not start: "+h)
		if res[0].Properties.Message != "tool "+h+" is new" || res[0].Properties.Tool != h {
			t.Errorf("the finding's properties changed: %+v", res[0].Properties)
		}
		for _, l := range res[0].Locations[0].LogicalLocations {
			for _, s := range []string{l.Name, l.FullyQualifiedName} {
				if strings.IndexFunc(s, termtext.Hidden) >= 0 {
					t.Errorf("logical location %q shows a hidden character", s)
				}
			}
		}
		if got := res[0].Locations[0].LogicalLocations[1].Name; got != termtext.Escape(h) {
			t.Errorf("tool's logical location %q, want %q", got, termtext.Escape(h))
		}
		// The whole log validates and is JSON.
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		checkSARIF(t, string(b))
	}
	// Random text over the characters that matter.
	alphabet := []rune("[]()`<>{}\\!*_ ahttps:/\n\r\t\x00\x1b\u202E\u2066\u200B\uFEFF\U000E0041é")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		n := rng.IntN(24)
		var b strings.Builder
		for range n {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		sarifSafe(t, sarifText(b.String()), b.String())
	}
	// etdi's own rule texts: braces doubled, the help's one link kept.
	doc := sarifLog(&checkOutput{}, sarifOptions{root: "/", policy: "trust.json"})
	for _, r := range doc.Runs[0].Tool.Driver.Rules {
		for _, s := range []string{r.ShortDescription.Text, r.FullDescription.Text, r.Help.Text, r.Help.Markdown} {
			if strings.Count(s, "{")%2 != 0 || strings.Count(s, "}")%2 != 0 {
				t.Errorf("rule %s: a single brace in %q", r.ID, s)
			}
		}
		if !strings.Contains(r.Help.Markdown, "[SPEC.md](https://github.com/etdi-dev/etdi/blob/") {
			t.Errorf("rule %s lost its help link: %q", r.ID, r.Help.Markdown)
		}
	}
	if got := sarifPlain("a {b} c"); got != "a {{b}} c" {
		t.Errorf("sarifPlain: %q", got)
	}
}

// singleBrace finds a placeholder: "{0}" not doubled.
var singleBrace = regexp.MustCompile(`(^|[^{])\{0\}($|[^}])`)

// FuzzSARIFText: whatever the text, the message is safe and undoes to the
// terminal escape of the text.
func FuzzSARIFText(f *testing.F) {
	for _, h := range hostileTexts {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sarifSafe(t, sarifText(s), s)
	})
}
