package main

import (
	"bufio"
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/pin"
)

// The answers of an approval on a terminal: y approves, anything else
// (an empty line, an unknown answer) does not; a approves the rest that
// may be approved without a name but still asks about a changed
// definition and changed instructions; j shows and asks again; the end
// of input stops, approving nothing more.
func TestApprovalAnswers(t *testing.T) {
	c := &pin.Comparison{Findings: []finding.Finding{
		{Server: "unsigned:notes", Tool: "a", Kind: finding.NewTool, Severity: finding.Error},
		{Server: "unsigned:notes", Tool: "b", Kind: finding.RugPull, Severity: finding.Error},
		{Server: "unsigned:notes", Tool: "c", Kind: finding.NewTool, Severity: finding.Error},
		{Server: "unsigned:notes", Kind: finding.InstructionsChanged, Severity: finding.Error},
		{Server: "unsigned:notes", Tool: "d", Kind: finding.NewTool, Severity: finding.Error},
	}}
	for _, tc := range []struct {
		in, want string
		accept   bool
	}{
		{"y\nn\ny\ny\nn\n", "a c", true},
		{"a\n", "a", false},                // b asked, and the input ends
		{"a\ny\ny\n", "a b c d", true},     // b and the instructions asked
		{"a\nn\nn\n", "a c d", false},      // declined despite a
		{"x\n\nmaybe\nN\nY\n", "d", false}, // an unknown or empty answer is no
		{"j\ny\n", "a", false},             // j asks again
	} {
		var stderr bytes.Buffer
		e := &env{ctx: context.Background(), stderr: &stderr}
		update := false
		names, accept, chosen, err := e.askApprovals(bufio.NewReader(strings.NewReader(tc.in)), "unsigned:notes", c, map[string]observedTool{}, &update)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(names, " "); got != tc.want || accept != tc.accept || chosen != (got != "" || accept) {
			t.Errorf("answers %q: approved %q, instructions %v, chosen %v; want %q, %v\n%s", tc.in, got, accept, chosen, tc.want, tc.accept, stderr.String())
		}
	}
}
