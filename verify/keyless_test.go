package verify_test

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/keyless"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/strictjson"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
	"github.com/sigstore/sigstore/pkg/signature"
)

var (
	releaseIdentity = sigstoretest.GitHubIdentity("acme/weather", "refs/tags/v1.0.0", ".github/workflows/release.yml")
	releasePattern  = `https://github\.com/acme/weather/\.github/workflows/release\.yml@refs/tags/v[0-9.]+`
)

func weatherManifest(t testing.TB) *etdi.Manifest {
	t.Helper()
	data, err := os.ReadFile("../cmd/etdi/demodata/weather.manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := etdi.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// signKeyless signs the weather manifest (provider "acme") at the test
// instance as the GitHub Actions workflow its token names.
func signKeyless(t *testing.T, in *sigstoretest.Instance, payload []byte) []byte {
	t.Helper()
	if payload == nil {
		_, payload, _ = sign.Build(weatherManifest(t), sign.Options{})
	}
	b, err := keyless.Sign(context.Background(), payload, keyless.SignOptions{
		FulcioURL: in.URL, RekorURL: in.URL, IDToken: in.Token(in.GitHubClaims)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// keylessPolicy trusts in's root and, for each provider, the signers given.
func keylessPolicy(t *testing.T, in *sigstoretest.Instance, signers map[string][]trust.SigstoreIdentity) *trust.Policy {
	t.Helper()
	p := trust.New()
	roots, err := trust.ParseSigstoreRoots(in.TrustedRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	p.SigstoreRoots = roots
	for prov, ids := range signers {
		for _, id := range ids {
			if _, err := p.AddSigstore(prov, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The policy goes through its file form, as a client loads it.
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if p, err = trust.Parse(data); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	return p
}

func githubSigner(identity string) trust.SigstoreIdentity {
	return trust.SigstoreIdentity{Issuer: sigstoretest.GitHubIssuer, Identity: identity}
}

func errorKinds(r *verify.Result) []finding.Kind {
	var out []finding.Kind
	for _, f := range r.Findings {
		if f.Severity == finding.Error {
			out = append(out, f.Kind)
		}
	}
	return out
}

func wantKinds(t *testing.T, r *verify.Result, want ...finding.Kind) {
	t.Helper()
	got := errorKinds(r)
	if len(got) != len(want) {
		t.Fatalf("error kinds %v, want %v; findings %+v", got, want, r.Findings)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("error kinds %v, want %v; findings %+v", got, want, r.Findings)
		}
	}
	if len(want) > 0 && r.Verified && want[0] != finding.Expired {
		t.Fatalf("verified despite %v", want)
	}
}

func TestKeylessGoodBundle(t *testing.T) {
	in := sigstoretest.New(t)
	b := signKeyless(t, in, nil)
	for name, id := range map[string]trust.SigstoreIdentity{
		"exact":   githubSigner(releaseIdentity),
		"pattern": {Issuer: sigstoretest.GitHubIssuer, IdentityPattern: releasePattern},
	} {
		t.Run(name, func(t *testing.T) {
			p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {id}})
			r := verify.Verify(b, p, verify.Options{})
			wantKinds(t, r)
			if !r.Verified || r.Signer == nil || r.Signer.Sigstore == nil {
				t.Fatalf("not verified keylessly: %+v", r)
			}
			s := r.Signer.Sigstore
			if s.Identity != releaseIdentity || s.Issuer != sigstoretest.GitHubIssuer || s.Repository != "https://github.com/acme/weather" || s.Ref != "refs/tags/v1.0.0" {
				t.Errorf("signer %+v", s)
			}
			if r.Signer.Trusted != id.String() || r.Signer.Algorithm != verify.Keyless || r.Signer.KeyID != "" {
				t.Errorf("signer %+v, want trust entry %q", r.Signer, id.String())
			}
			if time.Since(s.SignedAt) > time.Minute || s.SignedAt.After(time.Now()) {
				t.Errorf("signed at %v", s.SignedAt)
			}
		})
	}
}

func TestKeylessWrongIdentityOrIssuer(t *testing.T) {
	in := sigstoretest.New(t)
	b := signKeyless(t, in, nil)
	for name, id := range map[string]trust.SigstoreIdentity{
		"other workflow":  githubSigner(sigstoretest.GitHubIdentity("acme/weather", "refs/tags/v1.0.0", ".github/workflows/other.yml")),
		"other ref":       githubSigner(sigstoretest.GitHubIdentity("acme/weather", "refs/heads/main", ".github/workflows/release.yml")),
		"other issuer":    {Issuer: "https://gitlab.example", Identity: releaseIdentity},
		"pattern on main": {Issuer: sigstoretest.GitHubIssuer, IdentityPattern: `https://github\.com/acme/weather/\.github/workflows/release\.yml@refs/heads/main`},
		// A pattern must match the whole identity: one that matches only
		// a part of it would trust every identity that begins with it.
		// (One that leaves the owner or repository open, such as
		// acme/weather, is refused in the policy: package trust.)
		"partial pattern": {Issuer: sigstoretest.GitHubIssuer, IdentityPattern: `https://github\.com/acme/weather/\.github/workflows/release\.yml@refs/tags/v1`},
		"prefix pattern":  {Issuer: sigstoretest.GitHubIssuer, IdentityPattern: `https://github\.com/acme/weather/\.github/workflows/release\.yml`},
	} {
		t.Run(name, func(t *testing.T) {
			p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {id}})
			r := verify.Verify(b, p, verify.Options{})
			wantKinds(t, r, finding.SignatureInvalid)
			if !strings.Contains(r.Findings[0].Message, releaseIdentity) {
				t.Errorf("finding does not name the signer: %s", r.Findings[0].Message)
			}
		})
	}
}

func TestKeylessOtherRoot(t *testing.T) {
	in, other := sigstoretest.New(t), sigstoretest.New(t)
	b := signKeyless(t, in, nil)
	p := keylessPolicy(t, other, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity)}})
	wantKinds(t, verify.Verify(b, p, verify.Options{}), finding.SignatureInvalid)
}

// mutateBundle decodes a Sigstore bundle, lets f change it, and encodes it.
func mutateBundle(t *testing.T, b []byte, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestKeylessTamperedPayload(t *testing.T) {
	in := sigstoretest.New(t)
	b := signKeyless(t, in, nil)
	p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity)}})
	tampered := mutateBundle(t, b, func(m map[string]any) {
		env := m["dsseEnvelope"].(map[string]any)
		payload, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
		// A valid statement still, with a later expiry.
		st, err := etdi.ParseStatement(payload)
		if err != nil {
			t.Fatal(err)
		}
		st.Expires = st.Expires.Add(365 * 24 * time.Hour)
		env["payload"] = base64.StdEncoding.EncodeToString(st.Payload())
	})
	wantKinds(t, verify.Verify(tampered, p, verify.Options{}), finding.SignatureInvalid)
	garbage := mutateBundle(t, b, func(m map[string]any) {
		m["dsseEnvelope"].(map[string]any)["payload"] = base64.StdEncoding.EncodeToString([]byte(`{"not":"a statement"}`))
	})
	wantKinds(t, verify.Verify(garbage, p, verify.Options{}), finding.SignatureInvalid)
}

func TestKeylessMissingLogEntry(t *testing.T) {
	in := sigstoretest.New(t)
	b := signKeyless(t, in, nil)
	p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity)}})
	stripped := mutateBundle(t, b, func(m map[string]any) {
		delete(m["verificationMaterial"].(map[string]any), "tlogEntries")
	})
	r := verify.Verify(stripped, p, verify.Options{})
	if r.Verified || r.OK() {
		t.Fatalf("a bundle without a log entry verified: %+v", r)
	}
	// A log entry whose signed promise and proof are gone.
	noProof := mutateBundle(t, b, func(m map[string]any) {
		e := m["verificationMaterial"].(map[string]any)["tlogEntries"].([]any)[0].(map[string]any)
		delete(e, "inclusionPromise")
		delete(e, "inclusionProof")
	})
	if r := verify.Verify(noProof, p, verify.Options{}); r.Verified || r.OK() {
		t.Fatalf("a log entry with neither proof nor promise verified: %+v", r)
	}
}

// A v0.3 bundle's log entry needs its inclusion proof; the signed promise
// alone, as v0.1 bundles had it, is not enough.
func TestKeylessPromiseOnly(t *testing.T) {
	in := sigstoretest.New(t)
	b := signKeyless(t, in, nil)
	if !strings.Contains(string(b), "inclusionPromise") || !strings.Contains(string(b), "inclusionProof") {
		t.Fatal("the log entry lacks its promise or proof")
	}
	p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity)}})
	promiseOnly := mutateBundle(t, b, func(m map[string]any) {
		delete(m["verificationMaterial"].(map[string]any)["tlogEntries"].([]any)[0].(map[string]any), "inclusionProof")
	})
	wantKinds(t, verify.Verify(promiseOnly, p, verify.Options{}), finding.BundleInvalid)
	// A promise that does not verify fails even with a good proof.
	badPromise := mutateBundle(t, b, func(m map[string]any) {
		e := m["verificationMaterial"].(map[string]any)["tlogEntries"].([]any)[0].(map[string]any)
		e["integratedTime"] = "1700000000"
	})
	wantKinds(t, verify.Verify(badPromise, p, verify.Options{}), finding.SignatureInvalid)
}

// A certificate is valid for minutes; the log's signed time must fall
// inside it, or anyone holding a leaked certificate key could sign later.
func TestKeylessCertificateExpiredAtSignedTime(t *testing.T) {
	in := sigstoretest.New(t)
	in.LogTimeOffset = 20 * time.Minute
	b := signKeyless(t, in, nil)
	p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity)}})
	r := verify.Verify(b, p, verify.Options{})
	wantKinds(t, r, finding.SignatureInvalid)
	if !strings.Contains(r.Findings[0].Message, "certificate") {
		t.Errorf("finding does not say the certificate: %s", r.Findings[0].Message)
	}
}

// When the trusted root lists certificate transparency logs, a
// certificate must carry a signed timestamp of one: it proves the
// certificate authority published what it issued.
func TestKeylessCertificateNotInCTLog(t *testing.T) {
	in := sigstoretest.New(t)
	b := signKeyless(t, in, nil)
	in.WithCTLog = true
	p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity)}})
	r := verify.Verify(b, p, verify.Options{})
	wantKinds(t, r, finding.SignatureInvalid)
	if !strings.Contains(strings.ToLower(r.Findings[0].Message), "sct") && !strings.Contains(r.Findings[0].Message, "certificate timestamp") {
		t.Errorf("finding does not name the missing timestamp: %s", r.Findings[0].Message)
	}
}

// An identity trusted only for another provider is impersonation (exit 12),
// as a key of another provider is.
func TestKeylessImpersonation(t *testing.T) {
	in := sigstoretest.New(t)
	b := signKeyless(t, in, nil) // claims provider acme
	p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{
		"acme":   {githubSigner(sigstoretest.GitHubIdentity("acme/weather", "refs/tags/v1.0.0", ".github/workflows/other.yml"))},
		"globex": {{Issuer: sigstoretest.GitHubIssuer, IdentityPattern: releasePattern}},
	})
	r := verify.Verify(b, p, verify.Options{})
	wantKinds(t, r, finding.Impersonation)
	if f := r.Findings[0]; len(f.TrustedFor) != 1 || f.TrustedFor[0] != "globex" {
		t.Errorf("trusted for %v", f.TrustedFor)
	}
}

// One policy trusts a key-signing provider and a keyless one, and a third
// provider that signs either way.
func TestKeylessAndKeyInOnePolicy(t *testing.T) {
	in := sigstoretest.New(t)
	p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity)}})
	signer, pub := newKey(t)
	if _, err := p.AddKey("globex", trust.Key{PublicKey: pub}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddKey("acme", trust.Key{PublicKey: pub}); err != nil {
		t.Fatal(err)
	}
	m := weatherManifest(t)
	keyed, err := sign.Sign(m, signer, pub, sign.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := verify.Verify(keyed.Marshal(), p, verify.Options{}); !r.OK() || r.Signer.KeyID == "" {
		t.Fatalf("key-signed bundle: %+v", r)
	}
	if r := verify.Verify(signKeyless(t, in, nil), p, verify.Options{}); !r.OK() || r.Signer.Sigstore == nil {
		t.Fatalf("keyless bundle: %+v", r)
	}
	m.Provider.ID = "globex"
	globex, err := sign.Sign(m, signer, pub, sign.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := verify.Verify(globex.Marshal(), p, verify.Options{}); !r.OK() {
		t.Fatalf("globex: %+v", r)
	}
	// The keyless signer of acme does not sign for globex.
	_, payload, _ := sign.Build(m, sign.Options{})
	wantKinds(t, verify.Verify(signKeyless(t, in, payload), p, verify.Options{}), finding.Impersonation)
}

// A statement serialized by another tool (other member order, spaces),
// as GitHub's attestation action writes it, verifies: the signature is
// over the exact payload bytes, never over a re-serialization.
func TestKeylessForeignStatement(t *testing.T) {
	in := sigstoretest.New(t)
	_, payload, _ := sign.Build(weatherManifest(t), sign.Options{})
	var st map[string]any
	if err := json.Unmarshal(payload, &st); err != nil {
		t.Fatal(err)
	}
	foreign, err := json.MarshalIndent(st, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity)}})
	wantKinds(t, verify.Verify(signKeyless(t, in, foreign), p, verify.Options{}))
}

// Re-serializing the bundle (member order, whitespace) is harmless; a
// duplicate member, a second signature, another media type or a bundle
// without a certificate is refused.
func TestKeylessBundleForm(t *testing.T) {
	in := sigstoretest.New(t)
	b := signKeyless(t, in, nil)
	p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity)}})
	v, err := strictjson.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	wantKinds(t, verify.Verify(strictjson.AppendIndent(nil, v, "", "\t"), p, verify.Options{}))
	wantKinds(t, verify.Verify(mutateBundle(t, b, func(map[string]any) {}), p, verify.Options{}))

	dup := strings.Replace(string(b), `{"dsseEnvelope":`, `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","dsseEnvelope":`, 1)
	if dup == string(b) {
		t.Fatal("bundle layout changed; fix the test")
	}
	for name, bad := range map[string][]byte{
		"duplicate member": []byte(dup),
		"two signatures": mutateBundle(t, b, func(m map[string]any) {
			env := m["dsseEnvelope"].(map[string]any)
			sigs := env["signatures"].([]any)
			env["signatures"] = append(sigs, sigs[0])
		}),
		"media type v0.2": mutateBundle(t, b, func(m map[string]any) {
			m["mediaType"] = "application/vnd.dev.sigstore.bundle+json;version=0.2"
		}),
		"unknown member": mutateBundle(t, b, func(m map[string]any) { m["extra"] = true }),
		"other payload type": mutateBundle(t, b, func(m map[string]any) {
			m["dsseEnvelope"].(map[string]any)["payloadType"] = "text/plain"
		}),
		"public key": mutateBundle(t, b, func(m map[string]any) {
			vm := m["verificationMaterial"].(map[string]any)
			delete(vm, "certificate")
			vm["publicKey"] = map[string]any{"hint": "x"}
		}),
	} {
		t.Run(name, func(t *testing.T) {
			wantKinds(t, verify.Verify(bad, p, verify.Options{}), finding.BundleInvalid)
		})
	}
}

func newKey(t *testing.T) (signature.Signer, crypto.PublicKey) {
	t.Helper()
	priv, err := keys.Generate("ed25519")
	if err != nil {
		t.Fatal(err)
	}
	s, err := keys.Signer(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, priv.Public()
}

// BenchmarkVerifyKeyless measures a client verifying a keyless bundle
// offline: bundle parse, certificate chain, log entry (promise and proof),
// DSSE signature, identity, then the statement.
func BenchmarkVerifyKeyless(b *testing.B) {
	in := sigstoretest.New(b)
	_, payload, _ := sign.Build(weatherManifest(b), sign.Options{})
	bundle, err := keyless.Sign(context.Background(), payload, keyless.SignOptions{FulcioURL: in.URL, RekorURL: in.URL, IDToken: in.Token(in.GitHubClaims)})
	if err != nil {
		b.Fatal(err)
	}
	p := trust.New()
	if p.SigstoreRoots, err = trust.ParseSigstoreRoots(in.TrustedRoot(b)); err != nil {
		b.Fatal(err)
	}
	p.AddSigstore("acme", trust.SigstoreIdentity{Issuer: sigstoretest.GitHubIssuer, IdentityPattern: releasePattern})
	b.ReportAllocs()
	for b.Loop() {
		if r := verify.Verify(bundle, p, verify.Options{}); !r.OK() {
			b.Fatal(r.Findings)
		}
	}
}
