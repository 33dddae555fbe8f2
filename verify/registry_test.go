package verify_test

import (
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/keyless"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
)

// keyedRegistryBundle is the weather bundle of provider acme made for
// registry name own ("" for none), signed with a new key that policy p
// trusts for acme, whose registry namespaces are ns (none when empty).
func keyedRegistryBundle(t *testing.T, own string, ns ...string) ([]byte, *trust.Policy) {
	t.Helper()
	signer, pub := newKey(t)
	p := trust.New()
	if _, err := p.AddKey("acme", trust.Key{PublicKey: pub}); err != nil {
		t.Fatal(err)
	}
	if len(ns) > 0 {
		if _, err := p.AddRegistryNamespaces("acme", ns...); err != nil {
			t.Fatal(err)
		}
	}
	m := weatherManifest(t)
	m.Server.RegistryName = own
	b, err := sign.Sign(m, signer, pub, sign.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b.Marshal(), p
}

// impersonation checks that r fails with one impersonation whose message
// holds each of want.
func impersonation(t *testing.T, r *verify.Result, want ...string) {
	t.Helper()
	wantKinds(t, r, finding.Impersonation)
	if r.ExitCode() != finding.ExitImpersonation {
		t.Fatalf("exit %d", r.ExitCode())
	}
	for _, w := range want {
		if !strings.Contains(r.Findings[0].Message, w) {
			t.Errorf("message %q does not say %q", r.Findings[0].Message, w)
		}
	}
}

// TestAttackRegistryNameOfAnotherEntry: a genuine bundle made for
// io.github.acme/weather, attached to another namespace's registry entry,
// is impersonation, whatever the provider's namespaces; checked for its
// own entry (its owner in any case) it verifies.
func TestAttackRegistryNameOfAnotherEntry(t *testing.T) {
	bundle, p := keyedRegistryBundle(t, "io.github.acme/weather")
	for _, other := range []string{"io.github.evil/weather", "io.github.acme/weather2", "io.github.acme-evil/weather", "com.acme/weather"} {
		impersonation(t, verify.Verify(bundle, p, verify.Options{RegistryName: other}),
			`made for registry entry "io.github.acme/weather"`, `checked for registry entry "`+other+`"`)
	}
	for _, same := range []string{"io.github.acme/weather", "io.github.Acme/weather", ""} {
		if r := verify.Verify(bundle, p, verify.Options{RegistryName: same}); !r.OK() {
			t.Errorf("checked for %q: %+v", same, r.Findings)
		}
	}
}

// TestAttackRegistryNamespaceOutsideProvider: a provider that lists its
// namespaces signs for them only. A bundle of acme for io.github.evil/x
// (named by the entry, or by the bundle itself) is impersonation; a
// namespace is not a prefix of longer ones.
func TestAttackRegistryNamespaceOutsideProvider(t *testing.T) {
	bundle, p := keyedRegistryBundle(t, "", "io.github.acme", "com.acme")
	for _, name := range []string{"io.github.evil/x", "com.acme.evil/x", "io.github.acme-evil/x", "io.github.acme.evil/x", "COM.ACME/x"} {
		impersonation(t, verify.Verify(bundle, p, verify.Options{RegistryName: name}),
			`registry name "`+name+`"`, `provider "acme" publishes only under io.github.acme, com.acme`)
	}
	for _, name := range []string{"io.github.acme/weather", "io.github.ACME/weather", "com.acme/weather"} {
		if r := verify.Verify(bundle, p, verify.Options{RegistryName: name}); !r.OK() {
			t.Errorf("checked for %q: %+v", name, r.Findings)
		}
	}
	// The bundle names a registry entry outside the namespaces itself: it
	// is held to them without being found through a registry.
	own, p2 := keyedRegistryBundle(t, "io.github.evil/x", "io.github.acme")
	impersonation(t, verify.Verify(own, p2, verify.Options{}), `registry name "io.github.evil/x" is in namespace "io.github.evil"`)
	// A name that is none covers nothing.
	impersonation(t, verify.Verify(bundle, p, verify.Options{RegistryName: "io.github.acme/a/b"}), "covers nothing")
	impersonation(t, verify.Verify(bundle, p, verify.Options{RegistryName: "io.github.acme"}), "covers nothing")
}

// TestRegistryNameHarmless: a provider without namespaces keeps today's
// behaviour for any registry name, and a bundle checked for no registry
// name is not held to any.
func TestRegistryNameHarmless(t *testing.T) {
	bundle, p := keyedRegistryBundle(t, "")
	for _, name := range []string{"", "io.github.evil/x", "com.example/weather"} {
		if r := verify.Verify(bundle, p, verify.Options{RegistryName: name}); !r.OK() {
			t.Errorf("checked for %q: %+v", name, r.Findings)
		}
	}
	// Namespaces listed, no registry name anywhere: nothing to hold.
	bundle, p = keyedRegistryBundle(t, "", "io.github.acme")
	if r := verify.Verify(bundle, p, verify.Options{}); !r.OK() {
		t.Errorf("no registry name: %+v", r.Findings)
	}
}

// TestRegistryRulesAfterSignature: the registry rules judge what a
// trusted signer signed; a bundle no trusted key signed fails on its
// signature (10), not on the name it claims.
func TestRegistryRulesAfterSignature(t *testing.T) {
	bundle, _ := keyedRegistryBundle(t, "io.github.acme/weather")
	_, p := keyedRegistryBundle(t, "", "io.github.acme")
	r := verify.Verify(bundle, p, verify.Options{RegistryName: "io.github.evil/weather"})
	wantKinds(t, r, finding.SignatureInvalid)
}

// keylessAs signs the weather bundle (for registry name own) at in as a
// release workflow of repo.
func keylessAs(t *testing.T, in *sigstoretest.Instance, repo, own string) []byte {
	t.Helper()
	m := weatherManifest(t)
	m.Server.RegistryName = own
	return signManifestAs(t, in, m, sigstoretest.GitHubClaims(repo, "refs/tags/v1.0.0", ".github/workflows/release.yml"))
}

// TestAttackKeylessGitHubOwner: a bundle checked for a GitHub namespace
// io.github.OWNER and signed keylessly must be signed by a workflow of
// OWNER, as the registry required to publish there; a signer the provider
// trusts but of another owner is impersonation, even when the provider
// lists no namespaces. The owner compares in any case, and the rule
// does not apply to other namespaces or to a key.
func TestAttackKeylessGitHubOwner(t *testing.T) {
	in := sigstoretest.New(t)
	fork := sigstoretest.GitHubIdentity("evil/weather", "refs/tags/v1.0.0", ".github/workflows/release.yml")
	p := keylessPolicy(t, in, map[string][]trust.SigstoreIdentity{"acme": {githubSigner(releaseIdentity), githubSigner(fork)}})

	evil := keylessAs(t, in, "evil/weather", "")
	impersonation(t, verify.Verify(evil, p, verify.Options{RegistryName: "io.github.acme/weather"}),
		`GitHub namespace "io.github.acme"`, `signed by "`+fork+`"`, "not a workflow of https://github.com/acme/")
	// The same bundle for its own owner's namespace, or a domain's.
	for _, name := range []string{"io.github.evil/weather", "io.github.EVIL/weather", "com.acme/weather", ""} {
		if r := verify.Verify(evil, p, verify.Options{RegistryName: name}); !r.OK() {
			t.Errorf("checked for %q: %+v", name, r.Findings)
		}
	}
	// Acme's own workflow, the namespace's owner in another case.
	acme := keylessAs(t, in, "acme/weather", "io.github.Acme/weather")
	for _, name := range []string{"io.github.acme/weather", "io.github.ACME/weather", ""} {
		if r := verify.Verify(acme, p, verify.Options{RegistryName: name}); !r.OK() {
			t.Errorf("acme's bundle checked for %q: %+v", name, r.Findings)
		}
	}
	// The bundle's own registry name is checked the same way.
	evilOwn := keylessAs(t, in, "evil/weather", "io.github.acme/weather")
	impersonation(t, verify.Verify(evilOwn, p, verify.Options{}), "not a workflow of https://github.com/acme/")
}

// TestRegistryGitHubNamespaceKeySigned: a bundle signed with a key is not
// held to a GitHub identity (a key says nothing of GitHub accounts): in
// an io.github namespace its provider's namespaces alone bind it.
func TestRegistryGitHubNamespaceKeySigned(t *testing.T) {
	bundle, p := keyedRegistryBundle(t, "io.github.acme/weather", "io.github.acme")
	if r := verify.Verify(bundle, p, verify.Options{RegistryName: "io.github.acme/weather"}); !r.OK() {
		t.Fatalf("%+v", r.Findings)
	}
}

// TestRegistryFindingsKeylessSigner exercises the GitHub rule on what a
// verification established, including the parts a test Sigstore cannot
// forge: a certificate of another issuer, and one made for a repository
// of another owner.
func TestRegistryFindingsKeylessSigner(t *testing.T) {
	bundle, p := keyedRegistryBundle(t, "")
	r := verify.Verify(bundle, p, verify.Options{})
	if !r.OK() {
		t.Fatal(r.Findings)
	}
	st := r.Statement
	acmeID := "https://github.com/acme/weather/.github/workflows/release.yml@refs/tags/v1.0.0"
	for _, tc := range []struct {
		name string
		ks   keyless.Identity
		want string // "" for none
	}{
		{"acme's workflow", keyless.Identity{Issuer: trust.GitHubIssuer, Identity: acmeID, Repository: "https://github.com/acme/weather"}, ""},
		{"enterprise issuer", keyless.Identity{Issuer: trust.GitHubIssuer + "/acme-corp", Identity: acmeID}, ""},
		{"another issuer", keyless.Identity{Issuer: "https://gitlab.com", Identity: acmeID}, `its keyless signer's issuer "https://gitlab.com" is not GitHub Actions'`},
		{"issuer prefix", keyless.Identity{Issuer: trust.GitHubIssuer + ".evil.example", Identity: acmeID}, "is not GitHub Actions'"},
		{"another owner's repository", keyless.Identity{Issuer: trust.GitHubIssuer, Identity: acmeID, Repository: "https://github.com/evil/weather"}, `made for repository "https://github.com/evil/weather"`},
		{"an email", keyless.Identity{Issuer: trust.GitHubIssuer, Identity: "acme@example.com"}, "not a workflow of https://github.com/acme/"},
	} {
		signer := &verify.SignerIdentity{Algorithm: verify.Keyless, Provider: "acme", Sigstore: &tc.ks}
		fs := verify.RegistryFindings(st, p, "io.github.acme/weather", signer, "")
		switch {
		case tc.want == "" && len(fs) > 0:
			t.Errorf("%s: %+v", tc.name, fs)
		case tc.want != "" && (len(fs) != 1 || fs[0].Kind != finding.Impersonation || !strings.Contains(fs[0].Message, tc.want)):
			t.Errorf("%s: findings %+v, want an impersonation saying %q", tc.name, fs, tc.want)
		}
	}
	// A key signer is not subject to the rule.
	if fs := verify.RegistryFindings(st, p, "io.github.acme/weather", r.Signer, ""); len(fs) > 0 {
		t.Errorf("key signer: %+v", fs)
	}
}
