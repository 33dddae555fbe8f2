package policy

import (
	"strings"
	"testing"
)

// A file of forbid rules alone validates, with a warning that every call
// would be forbidden and what to add.
func TestWarningsNoPermit(t *testing.T) {
	for name, c := range map[string]struct{ text, why string }{
		"only forbid": {`@id("no-shell") forbid (principal, action == Etdi::Action::"call", resource) when { resource.scopes.contains("shell:*") };`,
			"no permit policy: every tool call"},
		"permit for reads only": {`@id("reads") permit (principal, action == Etdi::Action::"read", resource);
@id("no-shell") forbid (principal, action, resource) when { resource.scopes.contains("shell:*") };`, "the permits name only other actions"},
		"permits for other actions": {`@id("reads") permit (principal, action in [Etdi::Action::"read", Etdi::Action::"get"], resource);`, "the permits name only other actions"},
		"permit in other action":    {`@id("reads") permit (principal, action in Etdi::Action::"read", resource);`, "the permits name only other actions"},
		"permit never holds":        {`@id("off") permit (principal, action == Etdi::Action::"call", resource) when { false };`, "no permit can ever match (off)"},
		"permit unless true":        {`@id("off") permit (principal, action, resource) unless { true };`, "no permit can ever match (off)"},
	} {
		s := mustParse(t, name, c.text)
		w := s.Warnings()
		last := ""
		if len(w) > 0 {
			last = w[len(w)-1]
		}
		if !strings.Contains(last, c.why) || !strings.Contains(last, "every tool call would be forbidden") || !strings.Contains(last, Baseline) {
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
