package keys

import (
	"strings"
	"testing"
)

func TestResolveID(t *testing.T) {
	a := "sha256:" + strings.Repeat("ab", 32)
	b := "sha256:" + strings.Repeat("ab", 8) + strings.Repeat("cd", 24) // shares 16 hex digits with a
	c := "sha256:" + strings.Repeat("0f", 32)
	known := []string{a, b, c, a}
	for _, tc := range []struct {
		ref, want, err string
	}{
		{a, a, ""},
		{strings.TrimPrefix(c, "sha256:"), c, ""},
		{"sha256:" + strings.Repeat("0f", 8), c, ""},
		{strings.ToUpper(strings.Repeat("0f", 8)), c, ""},
		{"sha256:" + strings.Repeat("ab", 9), a, ""},
		{"sha256:" + strings.Repeat("ab", 8), "", "ambiguous"},
		{"sha256:" + strings.Repeat("0f", 7), "", "at least 16"},
		{"sha256:" + strings.Repeat("0f", 7) + "0g", "", "not a hex digit"},
		{"sha256:" + strings.Repeat("11", 8), "", "no known key"},
		{"", "", "at least 16"},
	} {
		got, err := ResolveID(tc.ref, known)
		if tc.err == "" && (err != nil || got != tc.want) {
			t.Errorf("ResolveID(%q) = %q, %v; want %q", tc.ref, got, err, tc.want)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ResolveID(%q) = %q, %v; want error %q", tc.ref, got, err, tc.err)
		}
	}
}
