package guard_test

import (
	"testing"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/pin"
)

// TestBlockedReportNeverExitsZero proves that a report whose tools were
// not established (nothing compared with the pins) exits 10 even when no
// error finding says why, while an established report with warnings only
// exits 0.
func TestBlockedReportNeverExitsZero(t *testing.T) {
	warning := finding.Finding{Kind: finding.SuspiciousText, Severity: finding.Warning}
	blocked := &guard.Report{Findings: []finding.Finding{warning}}
	if got := blocked.ExitCode(); got != finding.ExitSignature {
		t.Errorf("blocked, a warning only: exit %d, want %d", got, finding.ExitSignature)
	}
	if got := (&guard.Report{}).ExitCode(); got != finding.ExitSignature {
		t.Errorf("blocked, no finding: exit %d, want %d", got, finding.ExitSignature)
	}
	rugPull := finding.Finding{Kind: finding.RugPull, Severity: finding.Error}
	if got := (&guard.Report{Findings: []finding.Finding{rugPull}}).ExitCode(); got != finding.ExitRugPull {
		t.Errorf("blocked, a rug pull: exit %d, want %d", got, finding.ExitRugPull)
	}
	established := &guard.Report{Observation: &pin.Observation{Server: "unsigned:files"}, Findings: []finding.Finding{warning}}
	if got := established.ExitCode(); got != finding.ExitOK {
		t.Errorf("established, a warning only: exit %d, want 0", got)
	}
}
