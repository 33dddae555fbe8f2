package policy

import (
	"slices"
	"testing"
)

// mustParse parses one policy text named name, failing the test on error.
func mustParse(t testing.TB, name, text string) *Set {
	t.Helper()
	s, err := Parse(Source{Name: name, Text: []byte(text)})
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return s
}

func boolp(b bool) *bool { return &b }

// checkDecision compares a decision's effect, policies and reasons.
func checkDecision(t testing.TB, what string, got Decision, effect Effect, policies []string, reasons []string) {
	t.Helper()
	if policies == nil {
		policies = []string{}
	}
	if got.Effect != effect || !slices.Equal(got.Policies, policies) || !slices.Equal(got.Reasons, reasons) {
		t.Errorf("%s: got %s %q reasons %q errors %q, want %s %q reasons %q",
			what, got.Effect, got.Policies, got.Reasons, got.Errors, effect, policies, reasons)
	}
}
