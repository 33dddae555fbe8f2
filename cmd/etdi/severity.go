package main

import "github.com/etdi-dev/etdi/finding"

// findingLevel is how one finding's severity is shown. Every output takes
// it from levelOf, so the same finding is an error, a warning or
// information alike in prose, --json, SARIF and the history (SPEC.md §11).
type findingLevel struct {
	// Severity is the --json "severity" and the history record's.
	Severity finding.Severity
	// Label starts the prose line: "SECURITY ERROR" or, for a finding
	// that asks for a decision, "APPROVAL REQUIRED" (both errors: they
	// set the exit code), "warning" or "note".
	Label string
	// SARIF is the result level: "error", "warning" or "note".
	SARIF string
}

// levelOf is the one mapping from a finding to its shown severity. An
// approval-required finding is an error everywhere: it fails the check
// (exit 13) like any other error. A severity etdi does not know is shown
// as an error, never as something milder.
func levelOf(f finding.Finding) findingLevel {
	switch f.Severity {
	case finding.Warning:
		return findingLevel{finding.Warning, "warning", "warning"}
	case finding.Info:
		return findingLevel{finding.Info, "note", "note"}
	}
	if f.AsksApproval() {
		return findingLevel{finding.Error, "APPROVAL REQUIRED", "error"}
	}
	return findingLevel{finding.Error, "SECURITY ERROR", "error"}
}
