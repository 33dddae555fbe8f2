package policy

import (
	"fmt"
	"strings"
	"testing"
)

// hundredPolicies is a Set of 100 policies as an organization might
// write: one baseline permit, forbids on scopes and scope families, asks
// on annotations, rules on the session (scopes called before, rate) and
// patterns on tool names.
func hundredPolicies() string {
	var b strings.Builder
	n := 0
	add := func(format string, args ...any) {
		fmt.Fprintf(&b, format, args...)
		b.WriteString("\n\n")
		n++
	}
	add(`@id("baseline")
permit (principal, action == Etdi::Action::"call", resource);`)
	families := []string{"shell", "exec", "net", "files", "db", "mail", "calendar", "payments", "secrets", "cloud"}
	verbs := []string{"read", "write", "delete", "admin"}
	// 30 forbids on scopes.
	for i := range 30 {
		f, v := families[i%len(families)], verbs[i/len(families)%len(verbs)]
		add(`@id("no-%s-%s-%d")
forbid (principal, action == Etdi::Action::"call", resource)
when { resource.scopes.contains("%s:%s:%d") || resource.scopes.containsAll(["%s:%s", "secrets:*"]) };`, f, v, i, f, v, i, f, v)
	}
	// 15 asks on annotations.
	for i := range 15 {
		hint := []string{"destructiveHint", "openWorldHint", "idempotentHint"}[i%3]
		add(`@id("ask-%s-%d")
@ask("the tool declares %s (rule %d)")
forbid (principal, action == Etdi::Action::"call", resource)
when {
  resource.signed && resource.annotations has %s && resource.annotations.%s &&
  resource.scopes.contains("%s:*")
};`, hint, i, hint, i, hint, hint, families[i%len(families)])
	}
	// 20 rules on the session's scopes.
	for i := range 20 {
		from, to := families[i%len(families)], families[(i+3)%len(families)]
		add(`@id("flow-%s-to-%s-%d")
forbid (principal, action == Etdi::Action::"call", resource)
when { context.sessionScopes.contains("%s:%s") && resource.scopes.contains("%s:*") };`, from, to, i, from, verbs[i%len(verbs)], to)
	}
	// 15 rate limits.
	for i := range 15 {
		add(`@id("rate-%d")
forbid (principal, action == Etdi::Action::"call", resource)
when { context.callsThisMinute >= %d && resource.server like "*:%s*" || context.callsOfThisTool > %d && resource.name like "%s_*" };`,
			i, 30+i*10, families[i%len(families)], 50+i, verbs[i%len(verbs)])
	}
	// The rest, 19, on tool names.
	for k := n; k < 100; k++ {
		pat := []string{"*delete*", "drop_*", "*_all", "rm*", "*sudo*", "exec_*"}[k%6]
		if k%3 == 0 {
			add(`@id("ask-name-%d")
@ask("the tool's name matches %s")
forbid (principal, action == Etdi::Action::"call", resource)
when { resource.name like "%s" && !(resource.annotations has readOnlyHint && resource.annotations.readOnlyHint) };`, k, pat, pat)
		} else {
			add(`@id("name-%d")
forbid (principal, action == Etdi::Action::"call", resource)
when { resource.name like "%s%d" && resource.provider != "acme" };`, k, pat, k)
		}
	}
	if n != 100 {
		panic(fmt.Sprintf("%d policies", n))
	}
	return b.String()
}

// benchRequest is a call to a signed tool that writes files, in a session
// that read files and fetched a page.
var benchRequest = Request{
	Host: "claude-code",
	Tool: Tool{
		Server: "acme:files", Name: "write_file", Version: "1.4.2", Provider: "acme", Signed: true,
		Scopes:      []string{"files:write", "files:write:home"},
		Annotations: Annotations{ReadOnly: boolp(false), Destructive: boolp(true), Idempotent: boolp(true), OpenWorld: boolp(false)},
	},
	Context: Context{
		SessionScopes:   []string{"files:read", "net:fetch", "calendar:read"},
		CallsThisMinute: 12, CallsOfThisTool: 3,
		ArgumentsDigest: ArgumentsDigest([]byte(`{"path":"/home/me/notes.txt","content":"hello"}`)),
	},
}

func TestHundredPolicies(t *testing.T) {
	s := mustParse(t, "hundred.cedar", hundredPolicies())
	if n := len(s.Policies()); n != 100 {
		t.Fatalf("%d policies", n)
	}
	// The call is asked about: the tool is destructive and writes files.
	d := s.Authorize(benchRequest)
	checkDecision(t, "bench request", d, Ask, []string{"ask-destructiveHint-3"}, []string{"the tool declares destructiveHint (rule 3)"})
	if len(d.Errors) > 0 {
		t.Errorf("errors: %q", d.Errors)
	}
}

func BenchmarkAuthorize100(b *testing.B) {
	s := mustParse(b, "hundred.cedar", hundredPolicies())
	b.ReportAllocs()
	for b.Loop() {
		if d := s.Authorize(benchRequest); d.Effect != Ask {
			b.Fatal(d.Summary())
		}
	}
}

func BenchmarkParse100(b *testing.B) {
	text := []byte(hundredPolicies())
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := Parse(Source{Name: "hundred.cedar", Text: text}); err != nil {
			b.Fatal(err)
		}
	}
}
