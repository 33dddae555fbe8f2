package guard

import (
	"context"
	"crypto"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/trust"
)

// bankTool is the tool of acme's bank server.
const bankTool = `{"name":"transfer_money","description":"Transfer money from the user's account.","inputSchema":{"type":"object","properties":{"to":{"type":"string"},"amount":{"type":"number"}}}}`

// bankListing is a listing of acme's bank server carrying a bundle of
// sequence seq signed by priv.
func bankListing(t *testing.T, priv crypto.Signer, seq uint64) *Listing {
	t.Helper()
	signer, err := keys.Signer(priv)
	if err != nil {
		t.Fatal(err)
	}
	m, err := etdi.ParseManifest([]byte(`{"provider":{"id":"acme","name":"ACME"},"server":{"name":"bank","version":"1.0.0"},
		"tools":[{"version":"1.0.0","permissions":[],"definition":` + bankTool + `}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := sign.Sign(m, signer, priv.Public(), sign.Options{Sequence: seq})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ReadListing([]byte(`{"tools":[` + bankTool + `],"_meta":{"dev.etdi/bundle":` + string(b.Marshal()) + `}}`))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// What Approve decides: nothing for a server whose verification failed,
// nothing when the person withdraws, nothing of a server replaying an
// older bundle (with the refusal's exit code), and a refusal of a kind
// without a code still fails.
func TestApproveDecisions(t *testing.T) {
	ctx := context.Background()
	opts := Options{Policy: &trust.Policy{Unsigned: trust.Block}, Pins: filepath.Join(t.TempDir(), "pins.db"), Name: "weather", By: "tester"}
	l, err := ReadListing([]byte(`{"tools":[{"name":"get_weather","description":"Get the weather."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(ctx, l, opts)
	if err != nil || !r.Blocked() {
		t.Fatalf("an unsigned server under block: %v %+v", err, r)
	}
	if a, err := Approve(ctx, r, ApproveOptions{}); !errors.Is(err, ErrBlocked) || a != nil {
		t.Fatalf("approved a blocked server: %v %+v", err, a)
	}

	// Withdrawn: the person's review says no.
	opts.Policy = &trust.Policy{Unsigned: trust.Warn}
	r, err = Check(ctx, l, opts)
	if err != nil || r.ExitCode() != finding.ExitApproval {
		t.Fatalf("check: %v %+v", err, r)
	}
	seen := false
	a, err := Approve(ctx, r, ApproveOptions{Review: func(c *pin.Comparison) bool { seen = len(c.Findings) > 0; return false }})
	if err != nil || !seen || !a.Withdrawn || len(a.Approved) != 0 {
		t.Fatalf("withdrawn: %v %+v", err, a)
	}
	if r, _ := Check(ctx, l, opts); r.ExitCode() != finding.ExitApproval {
		t.Fatalf("a withdrawn approval approved: %+v", r.Findings)
	}

	wantReplayRefused(t, ctx, opts)
}

// wantReplayRefused: of a server replaying an older bundle, nothing is
// approved, with exit 11.
func wantReplayRefused(t *testing.T, ctx context.Context, opts Options) {
	t.Helper()
	priv, err := keys.Generate("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := opts.Policy.AddKey("acme", trust.Key{PublicKey: priv.Public()}); err != nil {
		t.Fatal(err)
	}
	r, err := Check(ctx, bankListing(t, priv, 2), opts)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := Approve(ctx, r, ApproveOptions{}); err != nil || a.ExitCode() != 0 || len(a.Approved) != 1 {
		t.Fatalf("approve sequence 2: %v %+v", err, a)
	}
	r, err = Check(ctx, bankListing(t, priv, 1), opts)
	if err != nil || r.ExitCode() != finding.ExitRugPull {
		t.Fatalf("check of sequence 1: %v %+v", err, r)
	}
	a, err := Approve(ctx, r, ApproveOptions{Tools: []string{"transfer_money"}})
	if err != nil || len(a.Approved) != 0 || len(a.Refused) == 0 || a.ExitCode() != finding.ExitRugPull || !strings.Contains(a.Refused[0].Reason, "not approving anything") {
		t.Fatalf("approve of a replayed bundle: %v %+v", err, a)
	}

}

// A refusal of a kind that has no code, or an unknown one, is 13.
func TestApproveResultExitCode(t *testing.T) {
	for _, k := range []string{string(finding.Removed), "no_such_kind", ""} {
		if c := (&ApproveResult{Refused: []pin.Refusal{{Kind: k}}}).ExitCode(); c != finding.ExitApproval {
			t.Errorf("refused %q: exit %d", k, c)
		}
	}
	if c := (&ApproveResult{}).ExitCode(); c != 0 {
		t.Errorf("nothing refused: exit %d", c)
	}
}
