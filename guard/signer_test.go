package guard

import (
	"context"
	"errors"
	"testing"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/keyless"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
)

// Who vouched for a bundle is its pin signer: a keyless signer or a key
// that also carries an identity provider's token is another signer than
// the same without it (a bundle that drops the token is a new signer),
// and a keyless signer is its trust entry, not the certificate's identity
// of one release.
func TestSignerOfKinds(t *testing.T) {
	key := &verify.SignerIdentity{KeyID: "k1", Algorithm: "ed25519"}
	sig := &verify.SignerIdentity{Algorithm: verify.Keyless, Trusted: "entry", Sigstore: &keyless.Identity{Issuer: "https://iss", Identity: "https://id/v1.2.3"}}
	tok := &verify.TokenIdentity{Issuer: "https://idp", Subject: "ci"}
	for _, c := range []struct {
		name string
		r    verify.Result
		want pin.SignerID
	}{
		{"key", verify.Result{Signer: key}, pin.SignerID{Kind: "key", ID: "k1"}},
		{"key and token", verify.Result{Signer: key, Token: tok}, pin.SignerID{Kind: "key+idp", ID: "k1 https://idp ci"}},
		{"keyless", verify.Result{Signer: sig}, pin.SignerID{Kind: "sigstore", ID: "entry"}},
		{"keyless and token", verify.Result{Signer: sig, Token: tok}, pin.SignerID{Kind: "sigstore+idp", ID: "entry https://idp ci"}},
		{"token alone", verify.Result{Token: tok}, pin.SignerID{Kind: "idp", ID: "https://idp ci"}},
	} {
		if got := SignerOf(&c.r); got != c.want {
			t.Errorf("%s: SignerOf = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// What served a listing, and why a launch could not be resolved, are in
// the observation the pins compare: a pinned server whose launch no
// longer resolves is told so, never taken as the same.
func TestObserveRecordsOrigin(t *testing.T) {
	l, err := ReadListing([]byte(`{"tools":[` + atkTool + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Policy: &trust.Policy{Unsigned: trust.Warn}, Name: "atk"}
	opts.Origin = &Origin{launched: true, err: errors.New("the lockfile does not name the package")}
	r, err := Observe(context.Background(), l, opts)
	if err != nil || r.Observation == nil {
		t.Fatal(err)
	}
	if r.Observation.Unresolved != "the lockfile does not name the package" || r.Observation.Served != "" {
		t.Errorf("unresolved launch: %+v", r.Observation)
	}
	opts.Origin = &Origin{url: "HTTPS://Example.COM/mcp?token=x"}
	r, err = Observe(context.Background(), l, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Observation.Served != "url https://example.com:443/mcp" || r.Observation.Unresolved != "" {
		t.Errorf("served by a URL: %+v", r.Observation)
	}
}

// A report whose server could not be established allows nothing and
// never exits 0, whatever its findings; an entry listed twice is never
// allowed; an error about the whole server withholds every entry, one
// about the instructions none.
func TestReportDecisions(t *testing.T) {
	blocked := &Report{Findings: []finding.Finding{{Kind: finding.UnsignedTool, Severity: finding.Warning}}}
	if blocked.ExitCode() == finding.ExitOK || blocked.Allowed("x") || blocked.AllowedItem(pin.ItemPrompt, "x") {
		t.Errorf("a blocked report: exit %d", blocked.ExitCode())
	}
	ok := func(fs ...finding.Finding) *Report {
		return &Report{Observation: &pin.Observation{}, Findings: fs, Tools: []pin.ToolState{
			{Item: pin.ItemTool, Name: "a", Status: pin.StatusOK}, {Item: pin.ItemTool, Name: "twice", Status: pin.StatusOK},
			{Item: pin.ItemTool, Name: "twice", Status: pin.StatusOK}, {Item: pin.ItemPrompt, Name: "p", Status: pin.StatusOK},
			{Item: pin.ItemTool, Name: "new", Status: pin.StatusNew}}}
	}
	r := ok()
	if !r.Allowed("a") || !r.AllowedItem(pin.ItemPrompt, "p") || r.Allowed("twice") || r.Allowed("new") || r.AllowedItem(pin.ItemTool, "p") {
		t.Errorf("verdicts: a %v p %v twice %v new %v", r.Allowed("a"), r.AllowedItem(pin.ItemPrompt, "p"), r.Allowed("twice"), r.Allowed("new"))
	}
	if r := ok(finding.Finding{Kind: finding.Revoked, Severity: finding.Error, Item: pin.ItemPrompt, Tool: "p"}); !r.Allowed("a") || r.AllowedItem(pin.ItemPrompt, "p") {
		t.Error("an error about one entry")
	}
	if r := ok(finding.Finding{Kind: finding.Revoked, Severity: finding.Warning, Tool: "a"}); !r.Allowed("a") {
		t.Error("a warning withholds")
	}
	if r := ok(finding.Finding{Kind: finding.SignatureInvalid, Severity: finding.Error}); r.Allowed("a") || r.AllowedItem(pin.ItemPrompt, "p") {
		t.Error("an error about the whole server")
	}
	if r := ok(finding.Finding{Kind: finding.InstructionsChanged, Severity: finding.Error}); !r.Allowed("a") {
		t.Error("changed instructions withhold the tools")
	}
}
