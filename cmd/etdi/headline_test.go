package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIVerifyHeadline: one headline says what holds and what does not;
// "verified" never stands alone next to a failing exit code, in prose or
// in --json.
func TestCLIVerifyHeadline(t *testing.T) {
	vec := func(name string) string { d, _ := filepath.Abs("../../testdata/vectors/" + name); return d }
	for _, tc := range []struct {
		vector   string
		tools    bool
		code     int
		headline string
	}{
		{"valid_ed25519", true, 0, "OK bundle.etdi.json: signature verified; the live tools match the signed definitions"},
		{"valid_ed25519", false, 0, "OK bundle.etdi.json: signature verified"},
		{"rugpull_description_changed", true, 11, "FAILED bundle.etdi.json (exit 11): signature verified, but live tools differ from the signed definitions"},
		{"signature_other_key", false, 10, "FAILED bundle.etdi.json (exit 10): signature not verified"},
		{"expired_bundle", false, 14, "FAILED bundle.etdi.json (exit 14): signature verified, but the bundle is expired or not yet valid"},
	} {
		t.Run(tc.vector, func(t *testing.T) {
			dir := vec(tc.vector)
			args := []string{"verify", "--trust", "trust.json", "--at", "2026-06-01T00:00:00Z"}
			if tc.tools {
				args = append(args, "--tools", "tools.json")
			}
			r := runEtdi(t, dir, nil, append(args, "bundle.etdi.json")...)
			first, _, _ := strings.Cut(r.stdout, "\n")
			if r.code != tc.code || first != tc.headline {
				t.Fatalf("exit %d, headline %q; want %d, %q", r.code, first, tc.code, tc.headline)
			}
			if r.code != 0 && strings.Contains(r.stdout, "\nverified") {
				t.Fatalf("a failing verification says verified:\n%s", r.stdout)
			}
			r = runEtdi(t, dir, nil, append(append(args, "--json"), "bundle.etdi.json")...)
			var out struct {
				OK                bool   `json:"ok"`
				Headline          string `json:"headline"`
				SignatureVerified bool   `json:"signatureVerified"`
				ExitCode          int    `json:"exitCode"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
				t.Fatal(err)
			}
			if out.OK != (tc.code == 0) || out.Headline != tc.headline || out.ExitCode != tc.code || strings.Contains(r.stdout, `"verified"`) {
				t.Fatalf("--json: %+v\n%s", out, r.stdout)
			}
		})
	}
}

// TestCLINotABundle: a tools/list or a manifest given where a bundle goes
// is a usage error that says how to use the file, not a security error.
func TestCLINotABundle(t *testing.T) {
	p := newPinEnv(t)
	r := p.expect(2, "is a tools/list result, not a bundle: pass it with --tools", "verify", "--trust", "trust.json", "live-ok.json")
	if strings.Contains(r.stdout+r.stderr, "SECURITY ERROR") {
		t.Fatalf("a mix-up reported as a security error:\n%s%s", r.stdout, r.stderr)
	}
	p.expect(2, "is a manifest, not a bundle: sign it first", "verify", "--trust", "trust.json", "v1.manifest.json")
	p.expect(1, "is a tools/list result, not a bundle", "check", "--trust", "trust.json", "--pins", "pins.db", "--bundle", "live-ok.json", "--tools", "live-ok.json")
	// Garbage and a tampered bundle stay security errors.
	p.write("garbage.json", `{"payloadType": "x"}`)
	p.expect(10, "SECURITY ERROR", "verify", "--trust", "trust.json", "garbage.json")
}
