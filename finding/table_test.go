package finding

import "testing"

// TestKindTable pins every kind's JSON name, exit code, default severity
// and approvability: CI scripts and hosts read them (SPEC.md §11), so a
// change of any of them is a change of etdi's interface, made here on
// purpose or not at all.
func TestKindTable(t *testing.T) {
	type row struct {
		exit     int
		severity string
		approval Approvability
	}
	want := map[string]row{
		"ambiguous_entry":        {12, "error", NotApprovable},
		"artifact_unresolved":    {12, "error", NotApprovable},
		"bundle_invalid":         {10, "error", NotApprovable},
		"confusable_name":        {12, "error", ApprovableByName},
		"definition_changed":     {11, "error", NotApprovable},
		"downgrade":              {11, "error", ApprovableByName},
		"expired":                {14, "error", NotApprovable},
		"fake_wrapper":           {12, "error", NotApprovable},
		"gate_override":          {12, "error", NotApprovable},
		"impersonation":          {12, "error", NotApprovable},
		"instructions_changed":   {11, "error", NotApprovable},
		"key_not_valid":          {14, "error", NotApprovable},
		"mixed_script":           {0, "warning", NotApprovable},
		"moving_target":          {0, "warning", NotApprovable},
		"name_collision":         {13, "warning", Approvable},
		"new_instructions":       {13, "error", Approvable},
		"new_signer":             {13, "error", Approvable},
		"new_tool":               {13, "error", Approvable},
		"new_version":            {13, "error", Approvable},
		"not_served":             {0, "info", NotApprovable},
		"program_unresolved":     {12, "error", NotApprovable},
		"mcpb_signature_invalid": {10, "error", NotApprovable},
		"mcpb_undeclared_tool":   {11, "error", NotApprovable},
		"mcpb_tool_mismatch":     {11, "error", NotApprovable},
		"mcpb_signer":            {0, "info", NotApprovable},
		"removed":                {0, "info", NotApprovable},
		"revoked":                {14, "error", NotApprovable},
		"rug_pull":               {11, "error", ApprovableByName},
		"secret_in_definition":   {11, "error", NotApprovable},
		"server_updated":         {13, "error", Approvable},
		"shadowing":              {12, "error", ApprovableByName},
		"signature_invalid":      {10, "error", NotApprovable},
		"signature_missing":      {10, "error", NotApprovable},
		"signer_changed":         {12, "error", ApprovableByName},
		"suspicious_text":        {0, "warning", NotApprovable},
		"unsigned_tool":          {10, "error", NotApprovable},
	}
	seen := map[string]bool{}
	for _, k := range Kinds() {
		seen[string(k)] = true
		w, ok := want[string(k)]
		if !ok {
			t.Errorf("kind %s is not in the pinned table", k)
			continue
		}
		if got := (row{k.ExitCode(), string(k.DefaultSeverity()), k.Approvability()}); got != w {
			t.Errorf("kind %s: %+v, want %+v", k, got, w)
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("kind %s is no longer known", k)
		}
	}
}

// TestUnknownKind proves that a kind etdi does not know never passes: it
// exits 10, is an error by default, is never approved and is not Known.
func TestUnknownKind(t *testing.T) {
	k := Kind("bogus")
	if k.Known() || k.ExitCode() != ExitSignature || k.DefaultSeverity() != Error || k.Approvability() != NotApprovable || k.AsksApproval() {
		t.Errorf("unknown kind: known %v, exit %d, severity %s, approvability %d, asks approval %v",
			k.Known(), k.ExitCode(), k.DefaultSeverity(), k.Approvability(), k.AsksApproval())
	}
}

// TestServerUpdatedRule proves that a server_updated finding the trust
// policy blocks exits 11 and is not resolved by approval, while one it
// asks about exits 13 and asks for approval.
func TestServerUpdatedRule(t *testing.T) {
	blocked := Finding{Kind: ServerUpdated, Severity: Error, Rule: "block"}
	if blocked.ExitCode() != ExitRugPull || blocked.AsksApproval() || ExitCode([]Finding{blocked}) != ExitRugPull {
		t.Errorf("blocked update: exit %d, asks approval %v", blocked.ExitCode(), blocked.AsksApproval())
	}
	ask := Finding{Kind: ServerUpdated, Severity: Error, Rule: "ask"}
	if ask.ExitCode() != ExitApproval || !ask.AsksApproval() || ExitCode([]Finding{ask}) != ExitApproval {
		t.Errorf("update asked about: exit %d, asks approval %v", ask.ExitCode(), ask.AsksApproval())
	}
}
