package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseErrors checks that each kind of bad policy file is refused at
// load, with an error naming the file and the position of what is wrong.
func TestParseErrors(t *testing.T) {
	const permit = "permit (principal, action == Etdi::Action::\"call\", resource)"
	const forbid = "forbid (principal, action == Etdi::Action::\"call\", resource)"
	tests := []struct {
		name, text string
		// want are substrings of the error: the position first.
		want []string
	}{
		{"empty", "", []string{"f.cedar: holds no policy"}},
		{"whitespace only", " \n\t\n", []string{"f.cedar: holds no policy"}},
		{"comment only", "// permit (principal, action, resource);\n", []string{"f.cedar: holds no policy"}},
		{"syntax error", "@id(\"a\")\n" + permit + " when { 1 + };", []string{"f.cedar: ", "2:", "parse error"}},
		{"unterminated", "@id(\"a\")\n" + permit, []string{"f.cedar: ", "parse error"}},
		{"missing @id", "\n\n  " + permit + ";", []string{"f.cedar:3:3: ", "needs an @id"}},
		{"missing @id, other annotation", "@name(\"a\")\n" + permit + ";", []string{"f.cedar:1:1: ", "needs an @id"}},
		{"bad @id: leading dash", "@id(\"-a\")\n" + permit + ";", []string{"f.cedar:1:1: ", `@id "-a" is not`}},
		{"bad @id: space", "@id(\"a b\")\n" + permit + ";", []string{"f.cedar:1:1: ", `@id "a b" is not`}},
		{"bad @id: empty", "@id(\"\")\n" + permit + ";", []string{"f.cedar:1:1: ", `@id "" is not`}},
		{"bad @id: newline", "@id(\"a\\nb\")\n" + permit + ";", []string{"f.cedar:1:1: ", `@id "a\nb" is not`}},
		{"bad @id: 129 bytes", "@id(\"" + strings.Repeat("a", 129) + "\")\n" + permit + ";",
			[]string{"f.cedar:1:1: ", `@id "` + strings.Repeat("a", 64) + `..." is not`}},
		{"duplicate @id", "@id(\"a\")\n" + permit + ";\n\n@id(\"a\")\n" + forbid + ";",
			[]string{"f.cedar:4:1: ", `@id "a" is also the id of the policy at f.cedar:1:1`}},
		{"@ask on a permit", "@id(\"a\")\n@ask(\"why\")\n" + permit + ";",
			[]string{"f.cedar:1:1: ", "@ask belongs on a forbid policy (policy a is a permit)"}},
		{"empty @ask", "@id(\"a\")\n@ask(\"\")\n" + forbid + ";", []string{"f.cedar:1:1: ", "@ask of policy a needs a reason"}},
		{"blank @ask", "@id(\"a\")\n@ask(\" \\t \")\n" + forbid + ";", []string{"f.cedar:1:1: ", "@ask of policy a needs a reason"}},
		{"@ask without value", "@id(\"a\")\n@ask\n" + forbid + ";", []string{"f.cedar:1:1: ", "@ask of policy a needs a reason"}},
		{"over-long @ask", "@id(\"a\")\n@ask(\"" + strings.Repeat("x", maxAsk+1) + "\")\n" + forbid + ";",
			[]string{"f.cedar:1:1: ", "@ask of policy a is longer than 512 bytes"}},
		{"unknown attribute", "@id(\"a\")\n" + permit + " when { resource.owner == \"me\" };",
			[]string{"f.cedar:1:1: ", "does not validate", "attribute `owner`"}},
		{"unknown context attribute", "@id(\"a\")\n" + permit + " when { context.arguments == \"x\" };",
			[]string{"f.cedar:1:1: ", "does not validate", "`arguments`"}},
		{"optional annotation without has", "@id(\"a\")\n" + forbid + " when { resource.annotations.destructiveHint };",
			[]string{"f.cedar:1:1: ", "does not validate", "optional attribute `annotations.destructiveHint`"}},
		{"unknown action", "@id(\"a\")\npermit (principal, action == Etdi::Action::\"delete\", resource);",
			[]string{"f.cedar:1:1: ", "does not validate", "Etdi::Action::\"delete\""}},
		{"unknown entity type", "@id(\"a\")\npermit (principal == Etdi::User::\"x\", action, resource);",
			[]string{"f.cedar:1:1: ", "does not validate"}},
		{"type error", "@id(\"a\")\n" + forbid + " when { context.callsThisMinute > \"3\" };",
			[]string{"f.cedar:1:1: ", "does not validate", "expected", "Long but saw String"}},
		{"invalid extension literal", "@id(\"a\")\n" + forbid + " when { ip(\"not an ip\").isLoopback() };",
			[]string{"f.cedar:1:1: ", "does not validate", "IP address"}},
		// Strict validation: what permissive validation lets through, a
		// forbid that can never match or cannot be evaluated.
		{"strict: String compared with Long", "@id(\"a\")\n" + forbid + " when { resource.name == 1 };",
			[]string{"f.cedar:1:1: ", "does not validate", "Long and String are not compatible"}},
		{"strict: Long in a set of String", "@id(\"a\")\n" + forbid + " when { resource.scopes.contains(1) };",
			[]string{"f.cedar:1:1: ", "does not validate", "Long and String are not compatible"}},
		{"strict: extension call on an attribute", "@id(\"a\")\n" + forbid + " when { ip(resource.name).isLoopback() };",
			[]string{"f.cedar:1:1: ", "does not validate", "non-literal"}},
		{"strict: empty set", "@id(\"a\")\n" + forbid + " when { context.sessionScopes == [] };",
			[]string{"f.cedar:1:1: ", "does not validate", "empty set"}},
		{"second policy's position", "@id(\"a\")\n" + permit + ";\n\n// b\n@id(\"b\")\n" + permit + " when { resource.owner == \"me\" };",
			[]string{"f.cedar:5:1: ", "for policy `b`"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(Source{Name: "f.cedar", Text: []byte(tt.text)})
			if err == nil {
				t.Fatalf("Parse accepted it: %v", s.Policies())
			}
			if s != nil {
				t.Errorf("Parse returned a Set with its error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "policy: ") {
				t.Errorf("error %q does not begin with policy: ", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

// TestParseSyntaxErrorPosition checks that a syntax error says where.
func TestParseSyntaxErrorPosition(t *testing.T) {
	text := "@id(\"a\")\npermit (principal, action, resource);\n@id(\"b\")\npermit (principal, action, resource) when { 1 + };\n"
	_, err := Parse(Source{Name: "rules/f.cedar", Text: []byte(text)})
	if err == nil {
		t.Fatal("a syntax error was accepted")
	}
	// Cedar's parser counts lines and columns itself; the file is named
	// by the Source.
	for _, w := range []string{"rules/f.cedar", ":4:50", `";"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

// TestParseReportsAllErrors checks that every bad policy of every file is
// named in one error, not only the first.
func TestParseReportsAllErrors(t *testing.T) {
	a := "@id(\"ok\")\npermit (principal, action, resource);\n" +
		"@id(\"bad-attr\")\npermit (principal, action == Etdi::Action::\"call\", resource) when { resource.owner == \"x\" };\n" +
		"@id(\"bad-type\")\nforbid (principal, action, resource) when { context.callsOfThisTool like \"*\" };\n" +
		"permit (principal, action, resource);\n"
	b := "@id(\"ok\")\npermit (principal, action, resource);\n" +
		"@id(\"fine\")\n@ask(\"\")\nforbid (principal, action, resource);\n"
	c := "@id(\"broken\") permit (principal, action, resource"
	_, err := Parse(
		Source{Name: "a.cedar", Text: []byte(a)},
		Source{Name: "b.cedar", Text: []byte(b)},
		Source{Name: "c.cedar", Text: []byte(c)},
		Source{Name: "d.cedar", Text: nil},
	)
	if err == nil {
		t.Fatal("Parse accepted bad files")
	}
	msg := err.Error()
	for _, w := range []string{
		"a.cedar:3:1: does not validate against etdi's schema: for policy `bad-attr`",
		"a.cedar:5:1: does not validate against etdi's schema: for policy `bad-type`",
		"a.cedar:7:1: a policy needs an @id",
		`b.cedar:1:1: @id "ok" is also the id of the policy at a.cedar:1:1`,
		"b.cedar:3:1: @ask of policy fine needs a reason",
		"c.cedar: parser error",
		"d.cedar: holds no policy",
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("error does not name %q:\n%s", w, msg)
		}
	}
	if n := strings.Count(msg, "; ") + 1; n != 7 || strings.Contains(msg, "\n") {
		t.Errorf("error has %d parts, want one line with one per fault (7):\n%s", n, msg)
	}
}

// TestParseAccepts checks what a valid Set describes of its policies.
func TestParseAccepts(t *testing.T) {
	text := `// Rules.
@id("baseline")
permit (principal, action == Etdi::Action::"call", resource);

@id("ask.Destructive_1:x/y-z")
@ask("may delete data")
forbid (principal, action, resource)
when { resource.signed && resource.annotations has destructiveHint && resource.annotations.destructiveHint };

@id("rate")
forbid (principal, action, resource) when { context.callsThisMinute >= 30 };

@id("` + strings.Repeat("l", 128) + `")
@ask("` + strings.Repeat("r", maxAsk) + `")
forbid (principal, action, resource) unless { resource.name like "get_*" };
`
	s := mustParse(t, "p.cedar", text)
	want := []Rule{
		{ID: "baseline", Effect: "permit", Position: "p.cedar:2:1"},
		{ID: "ask.Destructive_1:x/y-z", Effect: "forbid", Ask: "may delete data", Position: "p.cedar:5:1"},
		{ID: "rate", Effect: "forbid", Session: true, Position: "p.cedar:10:1"},
		{ID: strings.Repeat("l", 128), Effect: "forbid", Ask: strings.Repeat("r", maxAsk), Position: "p.cedar:13:1"},
	}
	if got := s.Policies(); !slices.Equal(got, want) {
		t.Errorf("Policies:\n got %+v\nwant %+v", got, want)
	}
	if !s.Session() {
		t.Error("Session() is false with a policy reading context")
	}
	if got := s.Files(); !slices.Equal(got, []string{"p.cedar"}) {
		t.Errorf("Files() = %q", got)
	}
	// Files returns a copy.
	s.Files()[0] = "changed"
	if s.Files()[0] != "p.cedar" {
		t.Error("Files() shares the Set's slice")
	}

	noSession := mustParse(t, "q.cedar", "@id(\"a\")\npermit (principal, action, resource) when { resource.signed };")
	if noSession.Session() {
		t.Error("Session() is true without a policy reading context")
	}
	if _, err := Parse(); err == nil {
		t.Error("Parse() without sources succeeded")
	}
}

func TestParseTooLarge(t *testing.T) {
	big := make([]byte, MaxFileSize+1)
	for i := range big {
		big[i] = ' '
	}
	copy(big, "@id(\"a\")\npermit (principal, action, resource);\n")
	_, err := Parse(Source{Name: "big.cedar", Text: big})
	if err == nil || !strings.Contains(err.Error(), "big.cedar: larger than 1048576 bytes") {
		t.Errorf("Parse of %d bytes: %v", len(big), err)
	}
}

func TestLoadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.cedar", "@id(\"base\")\npermit (principal, action, resource);\n")
	b := write("b.cedar", "// more\n@id(\"no-shell\")\nforbid (principal, action, resource) when { resource.scopes.contains(\"shell:exec\") };\n")

	s, err := LoadFiles(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Files(); !slices.Equal(got, []string{a, b}) {
		t.Errorf("Files() = %q", got)
	}
	if got := s.Policies(); len(got) != 2 || got[1].Position != b+":2:1" {
		t.Errorf("Policies() = %+v", got)
	}

	t.Run("duplicate across files", func(t *testing.T) {
		c := write("c.cedar", "\n@id(\"base\")\nforbid (principal, action, resource);\n")
		_, err := LoadFiles(a, c)
		want := c + `:2:1: @id "base" is also the id of the policy at ` + a + ":1:1"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error containing %q", err, want)
		}
	})
	t.Run("exactly MaxFileSize", func(t *testing.T) {
		text := "@id(\"a\")\npermit (principal, action, resource);\n"
		p := write("max.cedar", text+strings.Repeat(" ", MaxFileSize-len(text)))
		if _, err := LoadFiles(p); err != nil {
			t.Errorf("a file of MaxFileSize bytes: %v", err)
		}
	})
	t.Run("over MaxFileSize", func(t *testing.T) {
		text := "@id(\"a\")\npermit (principal, action, resource);\n"
		p := write("big.cedar", text+strings.Repeat(" ", MaxFileSize+1-len(text)))
		_, err := LoadFiles(p)
		if err == nil || !strings.Contains(err.Error(), p+" is larger than 1048576 bytes") {
			t.Errorf("a file of MaxFileSize+1 bytes: %v", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		p := filepath.Join(dir, "missing.cedar")
		_, err := LoadFiles(a, p)
		if err == nil || !strings.Contains(err.Error(), p) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a missing file: %v", err)
		}
	})
	t.Run("no file", func(t *testing.T) {
		if _, err := LoadFiles(); err == nil {
			t.Error("LoadFiles() without paths succeeded")
		}
	})
	t.Run("bad file among good", func(t *testing.T) {
		d := write("d.cedar", "@id(\"x\")\npermit (principal, action, resource) when { resource.owner == 1 };\n")
		_, err := LoadFiles(a, d, b)
		if err == nil || !strings.Contains(err.Error(), d+":1:1: does not validate") {
			t.Errorf("got %v", err)
		}
	})
}

// TestParseMaxPolicies checks the bound on the policies of a Set.
func TestParseMaxPolicies(t *testing.T) {
	var b strings.Builder
	for i := range MaxPolicies + 1 {
		fmt.Fprintf(&b, "@id(\"p%d\") permit (principal, action, resource);\n", i)
	}
	_, err := Parse(Source{Name: "many.cedar", Text: []byte(b.String())})
	if err == nil || !strings.Contains(err.Error(), "more than 10000 policies") {
		t.Errorf("%d policies: %v", MaxPolicies+1, err)
	}
}
