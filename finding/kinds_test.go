package finding

import "testing"

func TestExitCodeOrder(t *testing.T) {
	f := func(k Kind) Finding { return Finding{Kind: k, Severity: Error} }
	for _, tc := range []struct {
		fs   []Finding
		want int
	}{
		{nil, ExitOK},
		{[]Finding{{Kind: RugPull, Severity: Warning}}, ExitOK},
		{[]Finding{f(NewTool), f(Revoked)}, ExitRevoked},
		{[]Finding{f(Revoked), f(SignatureInvalid)}, ExitSignature},
		{[]Finding{f(SignatureInvalid), f(RugPull), f(NewTool)}, ExitRugPull},
		{[]Finding{f(RugPull), f(Shadowing)}, ExitImpersonation},
		// An error of a kind etdi does not know, or of one that is never
		// an error, never passes.
		{[]Finding{f("bogus")}, ExitSignature},
		{[]Finding{f(SuspiciousText), f(NewTool)}, ExitSignature},
	} {
		if got := ExitCode(tc.fs); got != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.fs, got, tc.want)
		}
	}
}

func TestKindVocabulary(t *testing.T) {
	for _, k := range Kinds() {
		if k.About() == "" {
			t.Errorf("%s: no description", k)
		}
		code, sev := k.ExitCode(), k.DefaultSeverity()
		if (code != ExitOK) != (sev == Error) && k != NameCollision {
			t.Errorf("%s: exit %d but default severity %s", k, code, sev)
		}
		if k.Approvability() != NotApprovable && sev != Error && k != NameCollision {
			t.Errorf("%s: approvable but not an error", k)
		}
		if k.AsksApproval() != (code == ExitApproval) {
			t.Errorf("%s: asks approval %v, exit %d", k, k.AsksApproval(), code)
		}
	}
	// name_collision is the one warning that is approved: it stands
	// beside a new_tool finding (exit 13) that approving resolves.
	if NameCollision.DefaultSeverity() != Warning || NameCollision.ExitCode() != ExitApproval || !NameCollision.AsksApproval() ||
		ExitCode([]Finding{{Kind: NameCollision, Severity: Warning}}) != ExitOK {
		t.Error("name_collision: a warning, approvable, exit 13 only through its new_tool finding")
	}
	if Kind("bogus").Known() || Kind("bogus").DefaultSeverity() != Error {
		t.Error("an unknown kind must count as an error")
	}
}
