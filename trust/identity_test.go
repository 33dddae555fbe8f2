package trust_test

import (
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/trust"
)

// GitHub Actions issuers, by form and declared (SPEC.md §16.2).
var githubIssuers = []trust.SigstoreIdentity{
	{Issuer: ghIssuer},
	{Issuer: ghIssuer + "/acme-corp"},                      // GitHub Enterprise Cloud, unique issuer
	{Issuer: "https://token.actions.acme.ghe.com"},         // GitHub Enterprise Cloud with data residency
	{Issuer: "https://ghes.acme.example/_services/token"},  // GitHub Enterprise Server
	{Issuer: "https://ci.acme.example/oidc", GitHub: true}, // declared in the policy
}

func TestIsGitHubIssuer(t *testing.T) {
	for iss, want := range map[string]bool{
		ghIssuer:                                                   true,
		ghIssuer + "/acme-corp":                                    true,
		"https://token.actions.acme.ghe.com":                       true,
		"https://ghes.acme.example/_services/token":                true,
		"https://ghes.acme.example/_services/token/":               true,
		"http://ghes.acme.example/_services/token":                 false,
		"https://ghes.acme.example/_services/tokens":               false,
		"https://token.actions.acme.ghe.com/x":                     false,
		"https://accounts.google.com":                              false,
		"https://gitlab.com":                                       false,
		"https://token.actions.githubusercontent.com.evil.example": false,
	} {
		if got := trust.IsGitHubIssuer(iss); got != want {
			t.Errorf("IsGitHubIssuer(%q) = %v, want %v", iss, got, want)
		}
	}
	if !(trust.SigstoreIdentity{Issuer: "https://ci.acme.example/oidc", GitHub: true}).IsGitHub() {
		t.Error("a declared GitHub issuer is not one")
	}
}

// Identity patterns of a GitHub signer that leave the owner or the
// repository open are refused: by CheckSigstoreIdentity, by AddSigstore
// (etdi trust add) and when a policy is parsed; those that name both
// literally are accepted. For every GitHub issuer form.
func TestGitHubIdentityPatternDenyList(t *testing.T) {
	_, roots := rootsOf(t, 1)
	const tail = `/\.github/workflows/release\.yml@refs/tags/v.*`
	bad := []string{
		`https://github\.com/[^/]+/weather` + tail,
		`https://github\.com/[^/]*/weather` + tail,
		`https://github\.com/.*/weather` + tail,
		`https://github\.com/.+/weather` + tail,
		`https://github\.com/\w+/weather` + tail,
		`https://github\.com/[a-z]+/weather` + tail,
		`https://github\.com/[[:alpha:]]+/weather` + tail,
		`https://github\.com/acme/[^/]+` + tail,
		`https://github\.com/acme/.*` + tail,
		`https://github\.com/acme/\w+` + tail,
		`https://github\.com/acme/weather.*`,
		`https://github\.com/acme/weather[^/]*` + tail,
		`https://github\.com/acme/weather(-evil)?` + tail,
		`https://github\.com/acme(-evil)?/weather` + tail,
		`https://github\.com/(acme|evil)/weather` + tail,
		`https://github\.com/acme/(weather|tools)` + tail,
		`https://github\.com/acme/weather` + tail + `|https://github\.com/evil/weather` + tail,
		`(?i)https://github\.com/acme/weather` + tail,
		`https://[^/]+/acme/weather` + tail,
		`https://github.com/acme/weather` + tail + `|.*`,
		`.*`, `[^/]*`, `\w+`, `.+`, `(.*)`, `https://.*`, `https://github\.com/.*`,
		`acme/weather`, `.*acme/weather` + tail,
	}
	good := []string{
		`https://github\.com/acme/weather` + tail,
		`https://github\.com/acme/weather/\.github/workflows/release\.yml@refs/tags/v[0-9]+\.[0-9]+\.[0-9]+`,
		`https://github\.com/acme/weather/\.github/workflows/(release|publish)\.yml@refs/heads/main`,
		`https://github\.com/acme/weather/\.github/workflows/release\.yml@refs/tags/v1|https://github\.com/acme/weather/\.github/workflows/release\.yml@refs/tags/v2`,
		`https://github\.com/acme/weather/.*`,
	}
	for _, gh := range githubIssuers {
		for _, pattern := range bad {
			s := gh
			s.IdentityPattern = pattern
			if err := trust.CheckSigstoreIdentity(s); err == nil {
				t.Errorf("issuer %s: pattern %q accepted", gh.Issuer, pattern)
			}
			p := trust.New()
			p.SigstoreRoots = roots
			if _, err := p.AddSigstore("acme", s); err == nil {
				t.Errorf("issuer %s: trust add of pattern %q accepted", gh.Issuer, pattern)
			}
		}
		for _, pattern := range good {
			s := gh
			s.IdentityPattern = pattern
			if err := trust.CheckSigstoreIdentity(s); err != nil {
				t.Errorf("issuer %s: pattern %q refused: %v", gh.Issuer, pattern, err)
			}
		}
	}
	// Policy files edited by hand: the same.
	p := trust.New()
	p.SigstoreRoots = roots
	good0 := trust.SigstoreIdentity{Issuer: ghIssuer + "/acme-corp", IdentityPattern: good[0]}
	if _, err := p.AddSigstore("acme", good0); err != nil {
		t.Fatal(err)
	}
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Parse(data); err != nil {
		t.Fatal(err)
	}
	quoted := strings.ReplaceAll(good[0], `\`, `\\`)
	if !strings.Contains(string(data), quoted) {
		t.Fatalf("policy: %s", data)
	}
	for _, pattern := range bad {
		edited := strings.Replace(string(data), quoted, strings.ReplaceAll(strings.ReplaceAll(pattern, `\`, `\\`), `"`, `\"`), 1)
		if _, err := trust.Parse([]byte(edited)); err == nil {
			t.Errorf("a policy with pattern %q parsed", pattern)
		}
	}
	// Other issuers keep the general rule: no pattern that trusts anyone,
	// but an e-mail domain is theirs to trust.
	google := "https://accounts.google.com"
	if err := trust.CheckSigstoreIdentity(trust.SigstoreIdentity{Issuer: google, IdentityPattern: `[a-z.]+@acme\.example`}); err != nil {
		t.Errorf("an e-mail domain pattern of another issuer: %v", err)
	}
	for _, pattern := range []string{`.*`, `[^/]*`, `.+@.+`} {
		if err := trust.CheckSigstoreIdentity(trust.SigstoreIdentity{Issuer: google, IdentityPattern: pattern}); err == nil {
			t.Errorf("issuer %s: pattern %q accepted", google, pattern)
		}
	}
	// Other issuers: a repository is an https URL, and a pattern is a
	// regular expression on its own (an unbalanced one would escape the
	// anchors and match "...@acme.example" anywhere at the end).
	gitlab := trust.SigstoreIdentity{Issuer: "https://gitlab.com", Identity: "https://gitlab.com/acme/weather//.gitlab-ci.yml@refs/heads/main", Repository: "http://gitlab.com/acme/weather"}
	if err := trust.CheckSigstoreIdentity(gitlab); err == nil {
		t.Error("an http repository accepted")
	}
	if err := trust.CheckSigstoreIdentity(trust.SigstoreIdentity{Issuer: google, IdentityPattern: `ci@acme\.example)|(?:[a-z]+@acme\.example`}); err == nil {
		t.Error("a pattern that is not a regular expression on its own accepted")
	}
	// The github member is true or absent.
	for _, v := range []string{`false`, `"yes"`, `1`} {
		edited := strings.Replace(string(data), `"issuer": "`, `"github": `+v+`, "issuer": "`, 1)
		if edited == string(data) {
			t.Fatal("the edit changed nothing")
		}
		if _, err := trust.Parse([]byte(edited)); err == nil {
			t.Errorf(`"github": %s parsed`, v)
		}
	}
	edited := strings.Replace(string(data), `"issuer": "`, `"github": true, "issuer": "`, 1)
	back, err := trust.Parse([]byte(edited))
	if err != nil || !back.Providers[0].Sigstore[0].GitHub {
		t.Fatalf(`"github": true: %v`, err)
	}
	// The declared entry is another entry, recorded under another name.
	if back.Providers[0].Sigstore[0].String() == good0.String() {
		t.Error("a declared GitHub entry is recorded as the undeclared one")
	}
}

// A GitHub signer without a repository trusts a certificate only from
// the repository its identity names, exactly: never a repository whose
// name or owner begins with it, nor one missing; with a repository, only
// that one. For every GitHub issuer form. Another issuer's signer
// (GitLab here) has no such rule.
func TestGitHubRepositoryMatching(t *testing.T) {
	id := "https://github.com/acme/weather/.github/workflows/release.yml@refs/tags/v1.2.0"
	for _, gh := range githubIssuers {
		exact := gh
		exact.Identity = id
		pattern := gh
		pattern.IdentityPattern = `https://github\.com/acme/weather/\.github/workflows/release\.yml@refs/tags/v.*`
		for _, s := range []trust.SigstoreIdentity{exact, pattern} {
			for repo, want := range map[string]bool{
				"https://github.com/acme/weather":      true,
				"https://github.com/acme/weather-evil": false,
				"https://github.com/acme-evil/weather": false,
				"https://github.com/acme/weathe":       false,
				"https://github.com/acme":              false,
				"https://github.com/acme/weather/":     false,
				"https://github.com/ACME/weather":      false,
				"https://github.com/evil/weather":      false,
				"https://github.com/acme/weather/x":    false,
				"":                                     false,
			} {
				if got := s.Matches(s.Issuer, id, repo); got != want {
					t.Errorf("%s, certificate of repository %q: matches %v, want %v", s, repo, got, want)
				}
			}
			// Another issuer than the entry's never matches.
			if s.Matches(ghIssuer+"/other", id, "https://github.com/acme/weather") {
				t.Errorf("%s matches another enterprise's issuer", s)
			}
		}
		// Identities of look-alike repositories do not match the pattern.
		for _, other := range []string{
			"https://github.com/acme/weather-evil/.github/workflows/release.yml@refs/tags/v1.2.0",
			"https://github.com/acme-evil/weather/.github/workflows/release.yml@refs/tags/v1.2.0",
		} {
			repo := other[:strings.Index(other, "/.github")]
			if pattern.Matches(pattern.Issuer, other, repo) {
				t.Errorf("%s matches %s", pattern, other)
			}
		}
		// A reusable workflow of acme/ci, called by acme/weather.
		shared := gh
		shared.Identity = "https://github.com/acme/ci/.github/workflows/sign.yml@refs/heads/main"
		if shared.Matches(shared.Issuer, shared.Identity, "https://github.com/acme/weather") {
			t.Errorf("%s: a reusable workflow matched for its caller without a repository", shared)
		}
		shared.Repository = "https://github.com/acme/weather"
		for repo, want := range map[string]bool{
			"https://github.com/acme/weather":      true,
			"https://github.com/acme/weather-evil": false,
			"https://github.com/acme/ci":           false,
			"https://github.com/evil/tools":        false,
		} {
			if got := shared.Matches(shared.Issuer, shared.Identity, repo); got != want {
				t.Errorf("%s, caller %q: matches %v, want %v", shared, repo, got, want)
			}
		}
		bad := shared
		bad.Repository = "https://github.com/acme"
		if err := trust.CheckSigstoreIdentity(bad); err == nil {
			t.Errorf("%s: a repository of an owner alone accepted", bad)
		}
	}
	// An exact GitHub identity that names no repository matches no
	// certificate, not even one without a source repository.
	for _, gh := range githubIssuers {
		odd := gh
		odd.Identity = "https://github.com/acme"
		if odd.Matches(odd.Issuer, odd.Identity, "") || odd.Matches(odd.Issuer, odd.Identity, "https://github.com/acme") {
			t.Errorf("%s matches without a repository", odd)
		}
	}
	// GitLab: no source-repository rule without a repository.
	gl := trust.SigstoreIdentity{Issuer: "https://gitlab.com", Identity: "https://gitlab.com/acme/weather//.gitlab-ci.yml@refs/heads/main"}
	if !gl.Matches(gl.Issuer, gl.Identity, "https://gitlab.com/acme/weather") || !gl.Matches(gl.Issuer, gl.Identity, "") {
		t.Error("a GitLab signer is held to GitHub's rule")
	}
}
