package guard

import (
	"slices"
	"testing"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/pin"
)

// Only an entry that matches its approval has the scopes that approval
// gave: a changed or new definition, even one the comparison carried
// scopes for, gets none.
func TestGivenScopesOnlyOfMatching(t *testing.T) {
	r := &Report{Tools: []pin.ToolState{
		{Item: pin.ItemTool, Name: "a", Status: "ok", Scopes: []string{"files:read"}},
		{Item: pin.ItemTool, Name: "b", Status: "changed", Scopes: []string{"files:write"}},
		{Item: pin.ItemTool, Name: "c", Status: "new", Scopes: []string{"net"}},
		{Item: pin.ItemTool, Name: "d", Status: "ok"},
	}}
	got := r.GivenScopes()
	if len(got) != 1 || !slices.Equal(got[[2]string{pin.ItemTool, "a"}], []string{"files:read"}) {
		t.Errorf("given scopes %v", got)
	}
	if got := (*Report)(nil).GivenScopes(); len(got) != 0 {
		t.Errorf("of no report: %v", got)
	}
}

// After the whole server was approved, an entry named too is approved by
// name only while the comparison still has an error about it.
func TestStillNamed(t *testing.T) {
	c := &pin.Comparison{Findings: []finding.Finding{
		{Kind: finding.RugPull, Severity: finding.Error, Item: pin.ItemTool, Tool: "changed"},
		{Kind: finding.UnsignedTool, Severity: finding.Warning, Item: pin.ItemTool, Tool: "warned"},
		{Kind: finding.RugPull, Severity: finding.Error, Item: pin.ItemPrompt, Tool: "p"},
	}}
	got := stillNamed([]string{"changed", "warned", "approved", pin.ItemRef(pin.ItemPrompt, "p")}, c)
	if want := []string{"changed", pin.ItemRef(pin.ItemPrompt, "p")}; !slices.Equal(got, want) {
		t.Errorf("still named %q, want %q", got, want)
	}
}
