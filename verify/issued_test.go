package verify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/testgen"
	"github.com/etdi-dev/etdi/verify"
)

// TestIssuedInTheFuture proves that a bundle whose issuedAt lies beyond
// the clock skew is refused as expired (kind expired, exit 14), while one within the skew
// verifies: a provider's clock may run a little ahead, but a bundle dated
// far ahead would outlive its own expiry window.
func TestIssuedInTheFuture(t *testing.T) {
	bundle, p, err := testgen.Signed(1)
	if err != nil {
		t.Fatal(err)
	}
	issued := time.Now()
	for _, tc := range []struct {
		name   string
		now    time.Time
		expect bool
	}{
		{"far ahead of the verifier's clock", issued.Add(-verify.ClockSkew - time.Hour), true},
		{"just beyond the skew", issued.Add(-verify.ClockSkew - 2*time.Second), true},
		{"within the skew", issued.Add(-verify.ClockSkew / 2), false},
		{"issued in the past", issued.Add(time.Minute), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := verify.Verify(bundle, p, verify.Options{Now: tc.now})
			if !r.Verified {
				t.Fatalf("signature not verified: %+v", r.Findings)
			}
			var future bool
			for _, f := range r.Findings {
				if f.Kind == finding.Expired && strings.Contains(f.Message, "issued in the future") {
					future = true
				}
			}
			if future != tc.expect {
				t.Fatalf("issued-in-the-future finding = %v, want %v (findings %+v)", future, tc.expect, r.Findings)
			}
			if r.OK() == tc.expect {
				t.Fatalf("OK() = %v with the issued-in-the-future finding %v", r.OK(), future)
			}
		})
	}
}
