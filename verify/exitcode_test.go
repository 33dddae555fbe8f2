package verify_test

import (
	"bytes"
	"testing"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/testgen"
	"github.com/etdi-dev/etdi/verify"
)

// TestResultExitCode proves that a result whose signature did not verify
// never exits 0, even with no error finding to say why (a warning only,
// or nothing), while a verified result exits with its findings' code: 0
// with warnings only.
func TestResultExitCode(t *testing.T) {
	warning := finding.Finding{Kind: finding.SuspiciousText, Severity: finding.Warning}
	newTool := finding.Finding{Kind: finding.NewTool, Severity: finding.Error}
	for _, tc := range []struct {
		name string
		r    verify.Result
		want int
	}{
		{"unverified, no finding", verify.Result{}, finding.ExitSignature},
		{"unverified, a warning only", verify.Result{Findings: []finding.Finding{warning}}, finding.ExitSignature},
		{"unverified, an approval finding", verify.Result{Findings: []finding.Finding{newTool}}, finding.ExitApproval},
		{"verified, no finding", verify.Result{Verified: true}, finding.ExitOK},
		{"verified, a warning only", verify.Result{Verified: true, Findings: []finding.Finding{warning}}, finding.ExitOK},
		{"verified, an approval finding", verify.Result{Verified: true, Findings: []finding.Finding{warning, newTool}}, finding.ExitApproval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.ExitCode(); got != tc.want {
				t.Errorf("ExitCode() = %d, want %d", got, tc.want)
			}
			if tc.r.OK() != (tc.want == finding.ExitOK) {
				t.Errorf("OK() = %v with exit code %d", tc.r.OK(), tc.want)
			}
		})
	}
}

// TestTamperedBundleExitCode proves that a real bundle whose payload was
// altered after signing exits 10, and the same bundle untouched exits 0.
func TestTamperedBundleExitCode(t *testing.T) {
	bundle, p, err := testgen.Signed(1)
	if err != nil {
		t.Fatal(err)
	}
	if r := verify.Verify(bundle, p, verify.Options{}); r.ExitCode() != finding.ExitOK || !r.OK() {
		t.Fatalf("the untouched bundle: exit %d, findings %+v", r.ExitCode(), r.Findings)
	}
	// The payload is base64 in the envelope: flip one character of it.
	i := bytes.Index(bundle, []byte(`"payload":"`))
	if i < 0 {
		t.Fatalf("no payload in %s", bundle)
	}
	tampered := bytes.Clone(bundle)
	j := i + len(`"payload":"`) + 10
	if tampered[j] == 'A' {
		tampered[j] = 'B'
	} else {
		tampered[j] = 'A'
	}
	r := verify.Verify(tampered, p, verify.Options{})
	if r.Verified || r.ExitCode() != finding.ExitSignature || r.OK() {
		t.Fatalf("the tampered bundle: verified %v, exit %d, findings %+v", r.Verified, r.ExitCode(), r.Findings)
	}
}
