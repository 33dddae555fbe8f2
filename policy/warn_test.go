package policy

import (
	"strings"
	"testing"
)

// A file of forbid rules alone validates, with a warning that every call
// would be forbidden and what to add.
func TestWarningsNoPermit(t *testing.T) {
	for name, text := range map[string]string{
		"only forbid": `@id("no-shell") forbid (principal, action == Etdi::Action::"call", resource) when { resource.scopes.contains("shell:*") };`,
		"permit for reads only": `@id("reads") permit (principal, action == Etdi::Action::"read", resource);
@id("no-shell") forbid (principal, action, resource) when { resource.scopes.contains("shell:*") };`,
		"permit never holds": `@id("off") permit (principal, action == Etdi::Action::"call", resource) when { false };`,
		"permit unless true": `@id("off") permit (principal, action, resource) unless { true };`,
	} {
		s := mustParse(t, name, text)
		w := s.Warnings()
		last := ""
		if len(w) > 0 {
			last = w[len(w)-1]
		}
		if !strings.Contains(last, "every tool call would be forbidden") || !strings.Contains(last, Baseline) {
			t.Errorf("%s: warnings %q", name, w)
		}
		if d := s.Authorize(Request{Tool: Tool{Server: "unsigned:x", Name: "y"}}); d.Effect != Forbid {
			t.Errorf("%s: %+v", name, d)
		}
	}
	s := mustParse(t, "never", `@id("off") permit (principal, action, resource) when { false };
@id("baseline") permit (principal, action in [Etdi::Action::"get", Etdi::Action::"call"], resource);`)
	if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0], "permit off can never match") {
		t.Errorf("warnings %q", w)
	}
}

// The shipped examples and a baseline have no warnings.
func TestWarningsNone(t *testing.T) {
	for _, text := range []string{
		Baseline,
		`@id("all") permit (principal, action, resource);`,
		`@id("in") permit (principal, action in Etdi::Action::"call", resource) when { resource.signed };`,
		`@id("b") permit (principal, action == Etdi::Action::"call", resource) when { true } unless { false };`,
	} {
		if w := mustParse(t, "ok", text).Warnings(); len(w) != 0 {
			t.Errorf("%s: warnings %q", text, w)
		}
	}
	for _, f := range []string{"ask-destructive.cedar", "exfiltration.cedar", "forbid-scope.cedar", "rate-limit.cedar", "reference-servers.cedar"} {
		if w := loadExample(t, f).Warnings(); len(w) != 0 {
			t.Errorf("%s: warnings %q", f, w)
		}
	}
}
