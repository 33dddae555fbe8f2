package policy

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, text string) *Set {
	t.Helper()
	s, err := Parse(Source{Name: "t.cedar", Text: []byte(text)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Authorize: a hard forbid wins over an @ask, an @ask over a permit; a
// forbid whose evaluation fails counts as matching, a permit whose
// evaluation fails does not; without a permit nothing is allowed.
func TestAuthorize(t *testing.T) {
	set := mustParse(t, `
@id("baseline") permit (principal, action, resource);
@id("ask-write") @ask("writes") forbid (principal, action, resource) when { resource.scopes.contains("files:*") };
@id("no-shell") forbid (principal, action, resource) when { resource.scopes.contains("shell:exec") };
@id("overflow") forbid (principal, action, resource) when { resource.name == "boom" && context.callsThisMinute + 9223372036854775807 > 0 };
@id("ask-overflow") @ask("odd") forbid (principal, action, resource) when { resource.name == "odd" && context.callsThisMinute + 9223372036854775807 > 0 };
@id("ask-destructive") @ask("destroys") forbid (principal, action, resource)
  when { resource.annotations has destructiveHint && resource.annotations.destructiveHint };
`)
	yes := true
	for _, c := range []struct {
		tool     Tool
		calls    int64
		effect   Effect
		policies []string
	}{
		{Tool{Server: "s", Name: "t"}, 0, Allow, []string{"baseline"}},
		{Tool{Server: "s", Name: "t", Scopes: []string{"files:write"}}, 0, Ask, []string{"ask-write"}},
		{Tool{Server: "s", Name: "t", Scopes: []string{"files:write", "shell:exec"}}, 0, Forbid, []string{"no-shell"}},
		{Tool{Server: "s", Name: "boom"}, 1, Forbid, []string{"overflow"}},
		{Tool{Server: "s", Name: "odd"}, 1, Ask, []string{"ask-overflow"}},
		// Annotations are seen only on a signed tool.
		{Tool{Server: "s", Name: "t", Annotations: Annotations{Destructive: &yes}}, 0, Allow, []string{"baseline"}},
		{Tool{Server: "s", Name: "t", Signed: true, Annotations: Annotations{Destructive: &yes}}, 0, Ask, []string{"ask-destructive"}},
	} {
		d := set.Authorize(Request{Host: "h", Tool: c.tool, Context: Context{CallsThisMinute: c.calls}})
		if d.Effect != c.effect || !slices.Equal(d.Policies, c.policies) {
			t.Errorf("%+v: %+v, want %s %v", c.tool, d, c.effect, c.policies)
		}
		if d.Effect == Ask && len(d.Reasons) != len(d.Policies) {
			t.Errorf("%+v: reasons %v", c.tool, d.Reasons)
		}
	}
	only := mustParse(t, `@id("p") permit (principal, action, resource) when { context.callsThisMinute + 9223372036854775807 > 0 };`)
	if d := only.Authorize(Request{Context: Context{CallsThisMinute: 1}}); !d.NoPermit() || len(d.Errors) != 1 || d.Summary() != "forbid (no policy permits it)" {
		t.Errorf("a permit that fails: %+v", d)
	}
}

// A policy must validate against the schema, strictly, and carry an @id.
func TestParseRejects(t *testing.T) {
	for _, text := range []string{
		``,
		`permit (principal, action, resource);`,
		`@id("a") permit (principal, action, resource); @id("a") forbid (principal, action, resource);`,
		`@id("a") permit (principal, action, resource) when { resource.owner == "x" };`,
		`@id("a") permit (principal, action, resource) when { resource.annotations.destructiveHint };`,
		`@id("a") @ask("why") permit (principal, action, resource);`,
		`@id("a") @ask("") forbid (principal, action, resource);`,
		`@id("-a") permit (principal, action, resource);`,
	} {
		if _, err := Parse(Source{Name: "t.cedar", Text: []byte(text)}); err == nil {
			t.Errorf("accepted %q", text)
		}
	}
}

// The session counts forwarded calls of the last minute and remembers the
// scopes of every call.
func TestSession(t *testing.T) {
	var s Session
	now := time.Unix(1_000_000, 0)
	for i := range 5 {
		s.Called(Tool{Name: "read", Scopes: []string{"files:read"}}, now.Add(time.Duration(i)*20*time.Second))
	}
	c := s.Context("read", nil, now.Add(90*time.Second))
	if c.CallsThisMinute != 3 || c.CallsOfThisTool != 5 || !slices.Equal(c.SessionScopes, []string{"files:read"}) ||
		!strings.HasPrefix(c.ArgumentsDigest, "sha256:") || c.ArgumentsDigest != ArgumentsDigest([]byte(`{}`)) {
		t.Fatalf("context %+v", c)
	}
	if ArgumentsDigest([]byte(`{"a":1,"a":2}`))[:4] != "raw-" || ArgumentsDigest([]byte(`{"b":1, "a":2}`)) != ArgumentsDigest([]byte(`{"a":2,"b":1}`)) {
		t.Error("ArgumentsDigest")
	}
}
