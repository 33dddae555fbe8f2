package verify_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
)

// The reusable-workflow attack of TestAttackKeylessReusableWorkflowOfAnotherRepository,
// with GitHub Enterprise issuers: an enterprise's unique issuer
// (https://token.actions.githubusercontent.com/<enterprise>) and a GitHub
// Enterprise Server (https://<host>/_services/token). A job of another
// repository of the enterprise that calls acme's reusable signing
// workflow gets a certificate with its identity; only the source
// repository tells them apart, and it is checked for these issuers too.
func TestAttackKeylessEnterpriseReusableWorkflow(t *testing.T) {
	for _, issuer := range []string{sigstoretest.GitHubIssuer + "/acme-corp", "https://ghes.acme.example/_services/token"} {
		t.Run(issuer, func(t *testing.T) {
			in := sigstoretest.New(t)
			shared := sigstoretest.GitHubIdentity("acme/ci", "refs/heads/main", ".github/workflows/sign.yml")
			claims := func(repo, workflow string) map[string]any {
				c := sigstoretest.GitHubClaims(repo, "refs/tags/v1.0.0", workflow)
				c["iss"] = issuer
				return c
			}
			own := claims("acme/weather", ".github/workflows/release.yml")
			own["job_workflow_ref"] = "acme/ci/.github/workflows/sign.yml@refs/heads/main"
			evil := claims("evil/tools", ".github/workflows/x.yml")
			evil["job_workflow_ref"] = "acme/ci/.github/workflows/sign.yml@refs/heads/main"
			ownBundle, evilBundle := signAs(t, in, own), signAs(t, in, evil)

			entry := trust.SigstoreIdentity{Issuer: issuer, Identity: shared}
			p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {entry}})
			for _, b := range [][]byte{ownBundle, evilBundle} {
				wantKinds(t, verify.Verify(b, p, verify.Options{}), finding.SignatureInvalid)
			}
			entry.Repository = "https://github.com/acme/weather"
			p = keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {entry}})
			if r := verify.Verify(ownBundle, p, verify.Options{}); !r.Verified {
				t.Fatalf("acme's own release did not verify: %+v", r.Findings)
			}
			wantKinds(t, verify.Verify(evilBundle, p, verify.Options{}), finding.SignatureInvalid)

			// The repository's own workflow, trusted by a pattern over its
			// tags, verifies from its repository.
			direct := signAs(t, in, claims("acme/weather", ".github/workflows/release.yml"))
			p = keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {{Issuer: issuer, IdentityPattern: releasePattern}}})
			if r := verify.Verify(direct, p, verify.Options{}); !r.Verified || r.Signer.Sigstore.Issuer != issuer {
				t.Fatalf("the repository's own release: %+v", r.Findings)
			}
		})
	}
}

// tokenCounter is a token verifier that accepts every token and counts
// what it was asked.
type tokenCounter struct{ calls int }

func (c *tokenCounter) VerifyToken(ctx context.Context, token string, cfg *trust.IDP, payload []byte, st *etdi.Statement) (*verify.TokenIdentity, error) {
	c.calls++
	return &verify.TokenIdentity{Issuer: cfg.Issuer, Subject: cfg.Subjects[0], Expires: time.Now().Add(time.Hour)}, nil
}

// A Sigstore bundle carries one signature and no identity provider token
// (SPEC.md §16.4). For a provider that trusts both a keyless signer and
// an identity provider, its require rule decides: "both" (the default)
// and "idp" never accept a keyless bundle, which has no token to show;
// "any" and "key" accept it on the keyless signature alone, with no token
// identity. No token verifier is consulted for a token that is not there.
func TestKeylessWithIdentityProvider(t *testing.T) {
	in := sigstoretest.New(t)
	b := signKeyless(t, in, nil)
	for _, c := range []struct {
		require  string
		verified bool
	}{
		{"", false},
		{trust.RequireBoth, false},
		{trust.RequireIDP, false},
		{trust.RequireAny, true},
		{trust.RequireKey, true},
	} {
		t.Run("require "+c.require, func(t *testing.T) {
			p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity)}})
			if err := p.SetIDP("acme", &trust.IDP{Issuer: "https://idp.acme.example", Audience: "urn:etdi", Subjects: []string{"acme-ci"}}, c.require); err != nil {
				t.Fatal(err)
			}
			tokens := &tokenCounter{}
			r := verify.Verify(b, p, verify.Options{Tokens: tokens})
			if r.Verified != c.verified {
				t.Fatalf("verified %v, want %v: %+v", r.Verified, c.verified, r.Findings)
			}
			if tokens.calls != 0 {
				t.Errorf("the token verifier was asked %d times about a bundle without a token", tokens.calls)
			}
			if !c.verified {
				wantKinds(t, r, finding.SignatureMissing)
				if !strings.Contains(r.Findings[0].Message, "no identity provider token") {
					t.Errorf("finding: %s", r.Findings[0].Message)
				}
				return
			}
			if r.Signer == nil || r.Signer.Algorithm != verify.Keyless || r.Token != nil {
				t.Fatalf("signer %+v, token %+v", r.Signer, r.Token)
			}
		})
	}
}
