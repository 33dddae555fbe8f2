package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/keyless"
)

const releasePattern = `https://github\.com/acme/weather/\.github/workflows/release\.yml@refs/tags/v.*`

// A provider signs keylessly in "GitHub Actions" (the job's OIDC token from
// the token request API, a certificate from Fulcio, an entry in Rekor: all
// on 127.0.0.1), and a client trusts it with a two-line entry, verifies,
// approves, and takes the next release signed under the next tag.
func TestKeylessProviderAndClient(t *testing.T) {
	in := sigstoretest.New(t)
	p := newPinEnv(t)
	p.write("root.json", string(in.TrustedRoot(t)))
	services := []string{"--fulcio-url", in.URL, "--rekor-url", in.URL}
	gh := []string{"ACTIONS_ID_TOKEN_REQUEST_URL=" + in.TokenURL, "ACTIONS_ID_TOKEN_REQUEST_TOKEN=" + in.RequestToken}
	signArgs := func(out string, extra ...string) []string {
		return append(append(append([]string{"sign", "--keyless", "--trusted-root", "root.json"}, services...), extra...), "--out", out, "v1.manifest.json")
	}

	// Outside a CI job, without a token: a clear error, no bundle.
	if r := p.run(signArgs("k.json")...); r.code != 1 || !strings.Contains(r.stderr, "no identity token") {
		t.Fatalf("no token: %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "k.json")); err == nil {
		t.Fatal("bundle written without a signature")
	}
	// A token is never sent in clear to another host.
	if r := runEtdi(t, p.dir, gh, "sign", "--keyless", "--fulcio-url", "http://fulcio.example", "--out", "k.json", "v1.manifest.json"); r.code != 2 || in.Tokens != 0 {
		t.Fatalf("http Fulcio: %d %s (tokens served %d)", r.code, r.stderr, in.Tokens)
	}
	if r := p.run("sign", "--keyless", "--key", "acme.key", "--out", "k.json", "v1.manifest.json"); r.code != 2 {
		t.Fatalf("--keyless with --key: %d %s", r.code, r.stderr)
	}
	if r := p.run("sign", "--key", "acme.key", "--rekor-url", in.URL, "--out", "k.json", "v1.manifest.json"); r.code != 2 {
		t.Fatalf("--rekor-url without --keyless: %d %s", r.code, r.stderr)
	}

	r := runEtdi(t, p.dir, gh, signArgs("k.json")...)
	identity := sigstoretest.GitHubIdentity("acme/weather", "refs/tags/v1.0.0", ".github/workflows/release.yml")
	if r.code != 0 || !strings.Contains(r.stderr, identity) || in.Tokens != 1 || in.Entries != 1 {
		t.Fatalf("sign --keyless: %d %s (tokens %d, entries %d)", r.code, r.stderr, in.Tokens, in.Entries)
	}
	if strings.Contains(r.stderr+r.stdout, in.RequestToken) {
		t.Fatal("the request token was printed")
	}
	b, _ := os.ReadFile(filepath.Join(p.dir, "k.json"))
	var head struct{ MediaType string }
	if json.Unmarshal(b, &head) != nil || head.MediaType != "application/vnd.dev.sigstore.bundle.v0.3+json" {
		t.Fatalf("not a Sigstore v0.3 bundle: %.200s", b)
	}

	// The two-line trust entry.
	p.ok("trust", "add", "--policy", "trust.json", "--provider", "acme", "--trusted-root", "root.json",
		"--sigstore-issuer", sigstoretest.GitHubIssuer, "--sigstore-identity-regexp", releasePattern)
	// (Printed escaped, as all text is: a backslash doubled.)
	if r := p.ok("trust", "list", "--policy", "trust.json"); !strings.Contains(r.stdout, "keyless "+sigstoretest.GitHubIssuer+" matching "+strings.ReplaceAll(releasePattern, `\`, `\\`)) {
		t.Fatalf("trust list:\n%s", r.stdout)
	}
	r = p.run("verify", "--trust", "trust.json", "k.json")
	if r.code != 0 || !strings.Contains(r.stdout, "signer    keyless "+identity) {
		t.Fatalf("verify: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = p.run("verify", "--json", "--trust", "trust.json", "k.json")
	validateAgainst(t, "../../schemas/verify.schema.json", "verify --json of a keyless bundle", r.stdout)
	var out struct {
		Signer struct {
			Algorithm string
			Trusted   string
			Sigstore  struct{ Identity, Issuer, Repository string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Signer.Sigstore.Identity != identity || out.Signer.Algorithm != "sigstore" ||
		out.Signer.Trusted != sigstoretest.GitHubIssuer+" ~"+releasePattern {
		t.Fatalf("verify --json: %v %+v\n%s", err, out, r.stdout)
	}

	// Another repository's workflow: not trusted (exit 10); once trusted for
	// another provider, impersonation (exit 12).
	in.GitHubClaims = sigstoretest.GitHubClaims("evil/weather", "refs/tags/v1.0.0", ".github/workflows/release.yml")
	if r := runEtdi(t, p.dir, gh, signArgs("evil.json")...); r.code != 0 {
		t.Fatalf("sign as evil: %d %s", r.code, r.stderr)
	}
	if r := p.run("verify", "--trust", "trust.json", "evil.json"); r.code != 10 {
		t.Fatalf("untrusted identity: %d\n%s", r.code, r.stdout)
	}
	p.ok("trust", "add", "--policy", "trust.json", "--provider", "evil", "--sigstore-issuer", sigstoretest.GitHubIssuer,
		"--sigstore-identity", sigstoretest.GitHubIdentity("evil/weather", "refs/tags/v1.0.0", ".github/workflows/release.yml"))
	if r := p.run("verify", "--trust", "trust.json", "evil.json"); r.code != 12 || !strings.Contains(r.stdout, "trusted only for \"evil\"") {
		t.Fatalf("impersonation: %d\n%s", r.code, r.stdout)
	}

	// A client approves the live server with the keyless bundle; the next
	// release, signed by the same workflow at the next tag, is the same
	// signer and the same definitions: nothing to approve.
	needNode(t)
	if r := p.liveCheck(nil, append([]string{"--yes", "--bundle", "k.json"}, fixture("kl")...)...); r.code != 0 {
		t.Fatalf("approve: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := p.ok("pin", "list", "--pins", "pins.db"); !strings.Contains(r.stdout, "sigstore "+sigstoretest.GitHubIssuer) {
		t.Fatalf("pin list:\n%s", r.stdout)
	}
	in.GitHubClaims = sigstoretest.GitHubClaims("acme/weather", "refs/tags/v1.0.1", ".github/workflows/release.yml")
	// The release guard reads a keyless previous release as it reads a
	// key-signed one.
	if r := runEtdi(t, p.dir, gh, signArgs("k2.json", "--previous", "k.json")...); r.code != 0 || !strings.Contains(r.stderr, "get_weather") {
		t.Fatalf("sign v1.0.1: %d %s", r.code, r.stderr)
	}
	if r := p.liveCheck(nil, append([]string{"--bundle", "k2.json"}, fixture("kl")...)...); r.code != 0 {
		t.Fatalf("next release: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The same bundle in-band (tools/list _meta) verifies as well.
	if r := p.liveCheck([]string{"FIXTURE_BUNDLE=" + filepath.Join(p.dir, "k2.json")}, fixture("kl")...); r.code != 0 || !strings.Contains(r.stdout, "keyless "+sigstoretest.GitHubIdentity("acme/weather", "refs/tags/v1.0.1", ".github/workflows/release.yml")) {
		t.Fatalf("in-band keyless bundle: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The fixture's rug pull is caught under a keyless bundle as under a key.
	if r := p.liveCheck([]string{"FIXTURE_CHANGE=description"}, append([]string{"--bundle", "k2.json"}, fixture("kl")...)...); r.code != 11 {
		t.Fatalf("rug pull: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The recipe for other Sigstore tools: etdi writes the predicate and the
// subjects, another tool (here: a statement built with encoding/json, in
// its own member order and layout, signed at the test Sigstore as GitHub's
// attest action would) makes the bundle, and etdi verifies it.
func TestKeylessAttestInputs(t *testing.T) {
	in := sigstoretest.New(t)
	p := newPinEnv(t)
	p.write("root.json", string(in.TrustedRoot(t)))
	if r := p.run("sign", "--attest-inputs", "att", "--keyless", "v1.manifest.json"); r.code != 2 {
		t.Fatalf("--attest-inputs with --keyless: %d %s", r.code, r.stderr)
	}
	p.ok("sign", "--attest-inputs", "att", "--issued-at", "2026-01-01T00:00:00Z", "--expires", "36500d", "v1.manifest.json")
	pred, err := os.ReadFile(filepath.Join(p.dir, "att", "predicate.json"))
	if err != nil {
		t.Fatal(err)
	}
	subjects, _ := os.ReadFile(filepath.Join(p.dir, "att", "subjects.txt"))
	st := map[string]any{"_type": "https://in-toto.io/Statement/v1", "predicateType": "https://etdi.dev/ToolManifest/v1"}
	var pv any
	if err := json.Unmarshal(pred, &pv); err != nil {
		t.Fatal(err)
	}
	st["predicate"] = pv
	var subs []any
	for _, line := range strings.Split(strings.TrimSpace(string(subjects)), "\n") {
		digest, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("subjects.txt line %q", line)
		}
		subs = append(subs, map[string]any{"name": name, "digest": map[string]string{"sha256": digest}})
	}
	if len(subs) != 2 {
		t.Fatalf("subjects:\n%s", subjects)
	}
	st["subject"] = subs
	payload, _ := json.MarshalIndent(st, "", "  ")
	b, err := keyless.Sign(context.Background(), payload, keyless.SignOptions{FulcioURL: in.URL, RekorURL: in.URL, IDToken: in.Token(in.GitHubClaims)})
	if err != nil {
		t.Fatal(err)
	}
	p.write("att.sigstore.json", string(b))
	p.ok("trust", "add", "--policy", "trust.json", "--provider", "acme", "--trusted-root", "root.json",
		"--sigstore-issuer", sigstoretest.GitHubIssuer, "--sigstore-identity-regexp", releasePattern)
	if r := p.run("verify", "--trust", "trust.json", "att.sigstore.json"); r.code != 0 || !strings.Contains(r.stdout, "get_forecast@1.1.0") {
		t.Fatalf("verify: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
