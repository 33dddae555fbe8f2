package main

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/etdi-dev/etdi/finding"
)

// TestSpecExitCodes checks the finding table of SPEC.md §11 against
// the finding vocabulary, in both directions.
func TestSpecExitCodes(t *testing.T) {
	spec, err := os.ReadFile("../../SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (\\d+|—)").FindAllStringSubmatch(string(spec), -1)
	seen := map[finding.Kind]bool{}
	for _, r := range rows {
		k := finding.Kind(r[1])
		seen[k] = true
		want, ok := k.ExitCode(), k.Known()
		if r[2] == "—" {
			if want != exitOK {
				t.Errorf("SPEC.md says %s has no exit code; the CLI maps it to %d", k, want)
			}
			continue
		}
		n, _ := strconv.Atoi(r[2])
		if !ok || n != want {
			t.Errorf("SPEC.md maps %s to %d; the CLI to %d", k, n, want)
		}
	}
	for _, k := range finding.Kinds() {
		if !seen[k] {
			t.Errorf("finding kind %s is missing from SPEC.md §11", k)
		}
	}
	for code, meaning := range map[int]string{exitOK: "ok", exitError: "operational error", exitUsage: "usage",
		exitSignature: "missing or invalid signature", exitRugPull: "rug pull", exitImpersonation: "impersonation",
		exitApproval: "approval required", exitRevoked: "revoked or expired"} {
		if !regexp.MustCompile("(?m)^\\| " + strconv.Itoa(code) + " \\| " + meaning).Match(spec) {
			t.Errorf("SPEC.md exit code table lacks %d (%s)", code, meaning)
		}
	}
}
