package verify_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/keyless"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"
)

// signAs signs the weather manifest (provider "acme") with a token of the
// given claims.
func signAs(t *testing.T, in *sigstoretest.Instance, claims map[string]any) []byte {
	t.Helper()
	return signManifestAs(t, in, weatherManifest(t), claims)
}

// signManifestAs signs m keylessly at in with a token of the given claims.
func signManifestAs(t *testing.T, in *sigstoretest.Instance, m *etdi.Manifest, claims map[string]any) []byte {
	t.Helper()
	_, payload, err := sign.Build(m, sign.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := keyless.Sign(context.Background(), payload, keyless.SignOptions{
		FulcioURL: in.URL, RekorURL: in.URL, IDToken: in.Token(claims)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A provider that signs from a reusable workflow (one of its own
// repositories, called by its release jobs) gets certificates whose identity
// is that reusable workflow: GitHub's job_workflow_ref, from which Fulcio
// makes the subject alternative name, names the called workflow, not the
// caller. Any repository on GitHub can call a public reusable workflow, so
// a job in the attacker's repository gets a certificate with exactly the
// identity the client trusts; only the certificate's source repository
// (1.3.6.1.4.1.57264.1.12) says evil/tools. A GitHub identity therefore
// verifies only from its own repository, unless the trust entry names the
// repository allowed to call it.
func TestAttackKeylessReusableWorkflowOfAnotherRepository(t *testing.T) {
	in := sigstoretest.New(t)
	shared := sigstoretest.GitHubIdentity("acme/ci", "refs/heads/main", ".github/workflows/sign.yml")
	own := sigstoretest.GitHubClaims("acme/weather", "refs/tags/v1.0.0", ".github/workflows/release.yml")
	own["job_workflow_ref"] = "acme/ci/.github/workflows/sign.yml@refs/heads/main"
	evil := sigstoretest.GitHubClaims("evil/tools", "refs/heads/main", ".github/workflows/x.yml")
	evil["job_workflow_ref"] = "acme/ci/.github/workflows/sign.yml@refs/heads/main"
	ownBundle, evilBundle := signAs(t, in, own), signAs(t, in, evil)

	// Without a repository, the reusable workflow verifies for nobody.
	p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(shared)}})
	for _, b := range [][]byte{ownBundle, evilBundle} {
		wantKinds(t, verify.Verify(b, p, verify.Options{}), finding.SignatureInvalid)
	}
	// Naming acme/weather as the caller lets acme's release job sign, and
	// still not the attacker's.
	entry := githubSigner(shared)
	entry.Repository = "https://github.com/acme/weather"
	p = keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {entry}})
	if r := verify.Verify(ownBundle, p, verify.Options{}); !r.Verified {
		t.Fatalf("acme's own release did not verify: %+v", r.Findings)
	}
	r := verify.Verify(evilBundle, p, verify.Options{})
	if r.Verified {
		t.Fatalf("a job of evil/tools calling acme's reusable workflow signs as acme: signer %+v", r.Signer.Sigstore)
	}
	wantKinds(t, r, finding.SignatureInvalid)
}

// An identity pattern is documented as matched whole, as ^(?:pattern)$, but
// the pattern is spliced into that text: a pattern with an unbalanced
// parenthesis closes the group, and its second half is anchored at the end
// only. This one reads as "acme's release workflow at a v tag, or x" and
// trusts every identity of the issuer.
func TestAttackKeylessPatternBreaksOutOfAnchors(t *testing.T) {
	in := sigstoretest.New(t)
	pattern := `https://github\.com/acme/weather/\.github/workflows/release\.yml@refs/tags/v[0-9.]+)|(.*`
	p := trust.New()
	roots, err := trust.ParseSigstoreRoots(in.TrustedRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	p.SigstoreRoots = roots
	if _, err := p.AddSigstore("acme", trust.SigstoreIdentity{Issuer: sigstoretest.GitHubIssuer, IdentityPattern: pattern}); err != nil {
		return // refused: the attack fails
	}
	evil := sigstoretest.GitHubClaims("evil/tools", "refs/heads/main", ".github/workflows/x.yml")
	r := verify.Verify(signAs(t, in, evil), p, verify.Options{})
	if r.Verified {
		t.Fatalf("pattern %q was accepted and trusts %q", pattern, r.Signer.Sigstore.Identity)
	}
}

// Held: a bundle whose certificate chains to a trusted certificate
// authority but whose log entry is of a log the trusted roots do not list.
func TestAttackKeylessLogNotInRoot(t *testing.T) {
	in, other := sigstoretest.New(t), sigstoretest.New(t)
	b := signKeyless(t, in, nil)
	var mine, theirs map[string]any
	if err := json.Unmarshal(in.TrustedRoot(t), &mine); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(other.TrustedRoot(t), &theirs); err != nil {
		t.Fatal(err)
	}
	mine["tlogs"] = theirs["tlogs"]
	hybrid, _ := json.Marshal(mine)
	roots, err := trust.ParseSigstoreRoots(hybrid)
	if err != nil {
		t.Fatal(err)
	}
	p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity)}})
	p.SigstoreRoots = roots
	wantKinds(t, verify.Verify(b, p, verify.Options{}), finding.SignatureInvalid)
	// Control: with the instance's own root it verifies.
	wantKinds(t, verify.Verify(b, keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity)}}), verify.Options{}))
}

// Held: protobuf JSON takes snake_case field names too; a second envelope
// or material under the other spelling is refused, not silently chosen.
func TestAttackKeylessAlternateFieldNames(t *testing.T) {
	in := sigstoretest.New(t)
	b := signKeyless(t, in, nil)
	p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity)}})
	for name, bad := range map[string][]byte{
		"dsse_envelope": mutateBundle(t, b, func(m map[string]any) { m["dsse_envelope"] = m["dsseEnvelope"] }),
		"verification_material": mutateBundle(t, b, func(m map[string]any) {
			m["verification_material"] = m["verificationMaterial"]
		}),
		"media_type only": mutateBundle(t, b, func(m map[string]any) {
			m["media_type"] = m["mediaType"]
			delete(m, "mediaType")
		}),
		"MEDIATYPE": mutateBundle(t, b, func(m map[string]any) {
			m["MEDIATYPE"] = m["mediaType"]
			delete(m, "mediaType")
		}),
	} {
		t.Run(name, func(t *testing.T) {
			if r := verify.Verify(bad, p, verify.Options{}); r.Verified || r.OK() {
				t.Fatalf("verified: %+v", r)
			}
		})
	}
}

// Held: whoever holds the certificate's key (the signing job itself, or
// whoever took it over) logs statement X, then ships statement Y signed
// with the same key under X's certificate and log entry, so that Y is
// never in the transparency log. The log entry's body binds X's payload.
func TestAttackKeylessUnloggedPayloadUnderLoggedEntry(t *testing.T) {
	in := sigstoretest.New(t)
	_, x, _ := sign.Build(weatherManifest(t), sign.Options{})
	m := weatherManifest(t)
	m.Tools[0].Permissions = nil
	_, y, err := sign.Build(m, sign.Options{Sequence: 99})
	if err != nil {
		t.Fatal(err)
	}
	kp, err := sgsign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := sgsign.Bundle(&sgsign.DSSEData{Data: x, PayloadType: etdi.PayloadType}, kp, sgsign.BundleOptions{
		Context:                    context.Background(),
		CertificateProvider:        sgsign.NewFulcio(&sgsign.FulcioOptions{BaseURL: in.URL}),
		CertificateProviderOptions: &sgsign.CertificateProviderOptions{IDToken: in.Token(in.GitHubClaims)},
		TransparencyLogs:           []sgsign.Transparency{sgsign.NewRekor(&sgsign.RekorOptions{BaseURL: in.URL})},
	})
	if err != nil {
		t.Fatal(err)
	}
	logged, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity)}})
	wantKinds(t, verify.Verify(logged, p, verify.Options{})) // control
	sig, _, err := kp.SignData(context.Background(), (&sgsign.DSSEData{Data: y, PayloadType: etdi.PayloadType}).PreAuthEncoding())
	if err != nil {
		t.Fatal(err)
	}
	swapped := mutateBundle(t, logged, func(m map[string]any) {
		env := m["dsseEnvelope"].(map[string]any)
		env["payload"] = base64.StdEncoding.EncodeToString(y)
		env["signatures"].([]any)[0].(map[string]any)["sig"] = base64.StdEncoding.EncodeToString(sig)
	})
	r := verify.Verify(swapped, p, verify.Options{})
	if r.Verified {
		t.Fatalf("a statement never logged verified under another statement's log entry (sequence %d)", r.Sequence)
	}
}

// Held: a certificate logged after it expired (a leaked certificate key
// used later) does not pass by dropping the log's signed promise and its
// integrated time, which the expiry check reads: without them no time is
// vouched for.
func TestAttackKeylessExpiredCertificateWithoutPromise(t *testing.T) {
	in := sigstoretest.New(t)
	in.LogTimeOffset = 20 * time.Minute
	b := signKeyless(t, in, nil)
	p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity)}})
	for name, f := range map[string]func(e map[string]any){
		"no promise":                  func(e map[string]any) { delete(e, "inclusionPromise") },
		"no promise, no time":         func(e map[string]any) { delete(e, "inclusionPromise"); delete(e, "integratedTime") },
		"promise, time inside window": func(e map[string]any) { e["integratedTime"] = fmt.Sprint(time.Now().Unix()) },
	} {
		t.Run(name, func(t *testing.T) {
			bad := mutateBundle(t, b, func(m map[string]any) {
				f(m["verificationMaterial"].(map[string]any)["tlogEntries"].([]any)[0].(map[string]any))
			})
			if r := verify.Verify(bad, p, verify.Options{}); r.Verified {
				t.Fatalf("a certificate logged after it expired verified: %+v", r.Signer.Sigstore)
			}
		})
	}
}
