package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	idpDir string
	idpNpm *npmFolder
)

func init() {
	idpDir, _ = filepath.Abs("../../testdata/idp")
	idpNpm = &npmFolder{dir: idpDir, marker: filepath.Join("node_modules", "oidc-provider")}
}

// needIDPNode installs oidc-provider and jose in testdata/idp.
func needIDPNode(t testing.TB) { idpNpm.need(t) }

// startIDP runs the oidc-provider fixture on a free loopback port and
// returns its issuer URL and a function that stops it.
func startIDP(t *testing.T) (string, func()) {
	needIDPNode(t)
	port := freePort(t)
	cmd := exec.Command("node", filepath.Join(idpDir, "server.mjs"))
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	t.Cleanup(stop)
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") {
				ready <- strings.TrimPrefix(sc.Text(), "ready ")
			}
		}
	}()
	select {
	case iss := <-ready:
		return iss, stop
	case <-time.After(30 * time.Second):
		t.Fatal("oidc-provider did not start")
	}
	return "", stop
}

// clientToken asks the IdP for a token directly, as an attacker or another
// tool would, with the given form values.
func clientToken(t *testing.T, issuer, client string, form url.Values) string {
	form.Set("grant_type", "client_credentials")
	req, _ := http.NewRequest("POST", issuer+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, client+"-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		AccessToken string `json:"access_token"`
	}
	json.Unmarshal(b, &r)
	if r.AccessToken == "" {
		t.Fatalf("token request: %s %s", resp.Status, b)
	}
	return r.AccessToken
}

func TestIDPWithOIDCProvider(t *testing.T) {
	issuer, stop := startIDP(t)
	p := newPinEnv(t)
	secrets := []string{"ACME_SECRET=acme-ci-secret", "GLOBEX_SECRET=globex-ci-secret", "VERIFIER_SECRET=etdi-verifier-secret"}
	run := func(args ...string) result {
		return runEtdi(t, p.dir, append(append([]string{}, pwEnv...), secrets...), args...)
	}
	expect := func(code int, want string, args ...string) result {
		t.Helper()
		r := run(args...)
		if r.code != code || !strings.Contains(r.stdout+r.stderr, want) {
			t.Fatalf("etdi %v: exit %d (want %d), lacks %q:\n%s%s", args, r.code, code, want, r.stdout, r.stderr)
		}
		return r
	}
	signArgs := func(client, secretEnv, out string, extra ...string) []string {
		return append([]string{"sign", "--idp-issuer", issuer, "--client-id", client, "--client-secret-env", secretEnv,
			"--audience", "urn:etdi", "--out", out}, append(extra, "v1.manifest.json")...)
	}
	// Provider in CI: a token from the IdP, bound to the statement.
	expect(0, "signed 2 tool(s)", signArgs("acme-ci", "ACME_SECRET", "idp.etdi.json")...)
	// Client: trust acme's IdP and subject.
	expect(0, "trusted identity provider", "trust", "add", "--policy", "idp.json", "--provider", "acme",
		"--issuer", issuer, "--subject", "acme-ci", "--audience", "urn:etdi")
	r := expect(0, "token     issuer "+issuer+", subject acme-ci", "verify", "--trust", "idp.json", "idp.etdi.json")
	_ = r

	t.Run("every algorithm of the IdP", func(t *testing.T) {
		for _, alg := range []string{"RS256", "PS256", "ES256", "ES384", "EdDSA"} {
			out := "alg-" + alg + ".json"
			expect(0, "signed", signArgs("acme-ci", "ACME_SECRET", out, "--resource", "urn:etdi:"+alg)...)
			expect(0, "verified", "verify", "--trust", "idp.json", out)
		}
	})
	t.Run("wrong audience", func(t *testing.T) {
		expect(0, "signed", signArgs("acme-ci", "ACME_SECRET", "aud.json", "--resource", "urn:other")...)
		expect(10, "invalid audience", "verify", "--trust", "idp.json", "aud.json")
	})
	t.Run("subject trusted only for another provider", func(t *testing.T) {
		expect(0, "trusted", "trust", "add", "--policy", "idp.json", "--provider", "globex",
			"--issuer", issuer, "--subject", "globex-ci", "--audience", "urn:etdi")
		expect(0, "signed", signArgs("globex-ci", "GLOBEX_SECRET", "globex.json")...)
		expect(12, `subject "globex-ci" is trusted only for "globex"`, "verify", "--trust", "idp.json", "globex.json")
	})
	t.Run("scopes narrower than the declared permissions", func(t *testing.T) {
		// The manifest declares net:fetch; a v2 declares geo:read too. A
		// token for net:fetch only, bound to the v2 statement, is refused.
		v2 := strings.Replace(readFile(t, p.dir, "v1.manifest.json"), `{"scope": "net:fetch", "description": "Calls the ACME weather API"}
      ],
      "definition": {
        "name": "get_weather"`, `{"scope": "net:fetch", "description": "Calls the ACME weather API"},
        {"scope": "geo:read"}
      ],
      "definition": {
        "name": "get_weather"`, 1)
		p.write("v2.manifest.json", v2)
		fixed := []string{"--issued-at", "2026-11-01T00:00:00Z", "--sequence", "7", "--expires", "2027-11-01T00:00:00Z"}
		b := expect(0, "etdi_manifest", append(append([]string{"sign", "--print-binding", "--idp-token-file", "x"}, fixed...), "v2.manifest.json")...)
		var binding struct {
			AuthorizationDetails json.RawMessage `json:"authorization_details"`
		}
		json.Unmarshal([]byte(b.stdout), &binding)
		tok := clientToken(t, issuer, "acme-ci", url.Values{"scope": {"net:fetch"}, "authorization_details": {string(binding.AuthorizationDetails)}})
		p.write("narrow.jwt", tok)
		expect(0, "signed", append(append([]string{"sign", "--idp-token-file", "narrow.jwt", "--out", "narrow.json"}, fixed...), "v2.manifest.json")...)
		expect(10, "does not grant scope(s) geo:read", "verify", "--trust", "idp.json", "narrow.json")
		// A token bound to another statement is refused when signing.
		expect(1, "does not fit this statement", append(append([]string{"sign", "--idp-token-file", "narrow.jwt", "--out", "x.json", "--sequence", "8"}, fixed[:2]...), "v2.manifest.json")...)
	})
	t.Run("dual mode", func(t *testing.T) {
		expect(0, "trusted", "trust", "add", "--policy", "both.json", "--provider", "acme", "--key", "acme.pub",
			"--issuer", issuer, "--subject", "acme-ci", "--audience", "urn:etdi")
		expect(10, "carries no signature", "verify", "--trust", "both.json", "idp.etdi.json")
		expect(0, "signed", "sign", "--key", "acme.key", "--out", "keyonly.json", "v1.manifest.json")
		expect(10, "carries no identity provider token", "verify", "--trust", "both.json", "keyonly.json")
		expect(0, "signed", append([]string{"sign", "--key", "acme.key"}, signArgs("acme-ci", "ACME_SECRET", "dual.json")[1:]...)...)
		r := expect(0, "verified", "verify", "--trust", "both.json", "dual.json")
		if !strings.Contains(r.stdout, "signer    key") || !strings.Contains(r.stdout, "token     issuer") {
			t.Fatalf("dual verification does not show both: %s", r.stdout)
		}
		expect(0, "requires any", "trust", "add", "--policy", "both.json", "--provider", "acme", "--require", "any")
		expect(0, "verified", "verify", "--trust", "both.json", "keyonly.json")
		expect(0, "verified", "verify", "--trust", "both.json", "idp.etdi.json")
	})
	t.Run("pins record the IdP identity", func(t *testing.T) {
		expect(0, "approved", "pin", "approve", "--trust", "idp.json", "--pins", "idp.db", "--bundle", "idp.etdi.json")
		r := expect(0, "idp "+issuer+" acme-ci", "pin", "list", "--pins", "idp.db")
		_ = r
		// The same tools vouched for by the key instead: signer changed.
		expect(0, "trusted", "trust", "add", "--policy", "idp.json", "--provider", "acme", "--key", "acme.pub", "--require", "any")
		expect(12, "signer_changed", "check", "--trust", "idp.json", "--pins", "idp.db", "--bundle", "keyonly.json")
	})
	t.Run("revocation", func(t *testing.T) {
		// oidc-provider does not introspect structured JWT access tokens
		// ("unsupported_token_type"): etdi fails closed. Introspection that
		// answers active:false is tested against an RFC 7662 endpoint in
		// package idp.
		expect(0, "trusted", "trust", "add", "--policy", "intro.json", "--provider", "acme", "--issuer", issuer, "--subject", "acme-ci",
			"--audience", "urn:etdi", "--introspection-endpoint", issuer+"/token/introspection",
			"--introspection-client-id", "etdi-verifier", "--introspection-secret-env", "VERIFIER_SECRET")
		expect(0, "signed", signArgs("acme-ci", "ACME_SECRET", "intro.etdi.json")...)
		expect(10, "unsupported_token_type", "verify", "--trust", "intro.json", "intro.etdi.json")
		// Central revocation of one token: its jti on the deny-list.
		var bundle struct {
			IDPToken string `json:"idpToken"`
		}
		json.Unmarshal([]byte(readFile(t, p.dir, "intro.etdi.json")), &bundle)
		parts := strings.Split(bundle.IDPToken, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
		var c struct {
			JTI string `json:"jti"`
		}
		json.Unmarshal(raw, &c)
		expect(0, "trusted", "trust", "add", "--policy", "deny.json", "--provider", "acme", "--issuer", issuer, "--subject", "acme-ci",
			"--audience", "urn:etdi", "--deny-jti", c.JTI)
		expect(14, "deny-list", "verify", "--trust", "deny.json", "intro.etdi.json")
		expect(0, "verified", "verify", "--trust", "idp.json", "intro.etdi.json")
	})
	t.Run("JWKS endpoint down", func(t *testing.T) {
		// Keys cached by the verifications above (no Cache-Control: 5
		// minutes) are used; a fresh cache fails closed.
		stop()
		expect(0, "verified", "verify", "--trust", "idp.json", "--tools", "live-ok.json", "idp.etdi.json")
		fresh := t.TempDir()
		r := runEtdi(t, p.dir, []string{"XDG_CACHE_HOME=" + fresh}, "verify", "--trust", "idp.json", "idp.etdi.json")
		// Unreachable is an operational error (exit 1), never a pass and
		// not a security error.
		if r.code != 1 || !strings.Contains(r.stderr, "could not reach the identity provider") || strings.Contains(r.stdout+r.stderr, "SECURITY ERROR") {
			t.Fatalf("IdP down, no cache: %d %s %s", r.code, r.stdout, r.stderr)
		}
		r = runEtdi(t, p.dir, []string{"XDG_CACHE_HOME=" + fresh}, "check", "--trust", "idp.json", "--pins", "idp.db", "--bundle", "idp.etdi.json", "--json")
		if r.code != 1 || !strings.Contains(r.stdout, "could not reach the identity provider") {
			t.Fatalf("check with the IdP down: %d %s %s", r.code, r.stdout, r.stderr)
		}
	})
}

// Tokens made by an independent JOSE implementation (the jose package),
// one per accepted algorithm, verify with a pinned JWKS.
func TestIDPTokensFromJose(t *testing.T) {
	needIDPNode(t)
	p := newPinEnv(t)
	fixed := []string{"--issued-at", "2026-11-01T00:00:00Z", "--sequence", "7", "--expires", "2027-11-01T00:00:00Z"}
	r := p.ok(append(append([]string{"sign", "--print-binding"}, fixed...), "v1.manifest.json")...)
	var binding struct {
		AuthorizationDetails []any `json:"authorization_details"`
	}
	json.Unmarshal([]byte(r.stdout), &binding)
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{"iss": "https://idp.example.com", "aud": "urn:etdi", "sub": "acme-ci",
		"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(), "scope": "net:fetch", "authorization_details": binding.AuthorizationDetails})
	for _, alg := range []string{"RS256", "PS256", "ES256", "ES384", "EdDSA"} {
		t.Run(alg, func(t *testing.T) {
			cmd := exec.Command("node", filepath.Join(idpDir, "jose-token.mjs"), alg)
			cmd.Stdin = strings.NewReader(string(claims))
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			var j struct {
				JWKS  json.RawMessage `json:"jwks"`
				Token string          `json:"token"`
			}
			json.Unmarshal(out, &j)
			p.write(alg+".jwks", string(j.JWKS))
			p.write(alg+".jwt", j.Token)
			policy := alg + ".trust.json"
			p.ok("trust", "add", "--policy", policy, "--provider", "acme", "--issuer", "https://idp.example.com",
				"--subject", "acme-ci", "--audience", "urn:etdi", "--jwks", alg+".jwks")
			p.ok(append(append([]string{"sign", "--idp-token-file", alg + ".jwt", "--out", alg + ".etdi.json"}, fixed...), "v1.manifest.json")...)
			p.expect(0, "subject acme-ci", "verify", "--trust", policy, alg+".etdi.json")
			// A policy pinning another alg's key refuses it.
			if alg == "EdDSA" {
				p.ok("trust", "add", "--policy", "other.json", "--provider", "acme", "--issuer", "https://idp.example.com",
					"--subject", "acme-ci", "--audience", "urn:etdi", "--jwks", "ES256.jwks")
				p.expect(10, "not in the pinned JWKS", "verify", "--trust", "other.json", alg+".etdi.json")
			}
		})
	}
}
