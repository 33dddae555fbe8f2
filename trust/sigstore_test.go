package trust_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/trust"
)

const ghIssuer = sigstoretest.GitHubIssuer

func rootsOf(t *testing.T, n int) ([]byte, []trust.SigstoreRoot) {
	t.Helper()
	var lines [][]byte
	for i := 0; i < n; i++ {
		lines = append(lines, sigstoretest.New(t).TrustedRoot(t))
	}
	data := bytes.Join(lines, []byte("\n"))
	roots, err := trust.ParseSigstoreRoots(data)
	if err != nil {
		t.Fatal(err)
	}
	return data, roots
}

func TestSigstoreRoots(t *testing.T) {
	one, roots := rootsOf(t, 1)
	if len(roots) != 1 {
		t.Fatalf("%d roots", len(roots))
	}
	// One per line, as 'gh attestation trusted-root' prints them, or an array.
	two, roots := rootsOf(t, 2)
	if len(roots) != 2 {
		t.Fatalf("%d roots from two lines", len(roots))
	}
	arr := append(append([]byte("["), bytes.Replace(two, []byte("\n"), []byte(","), 1)...), ']')
	if roots, err := trust.ParseSigstoreRoots(arr); err != nil || len(roots) != 2 {
		t.Fatalf("array: %v %d", err, len(roots))
	}
	for name, bad := range map[string]string{
		"empty":           "",
		"not JSON":        "{",
		"not a root":      `{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`,
		"unknown member":  strings.Replace(string(one), `{`, `{"extra":1,`, 1),
		"duplicate":       strings.Replace(string(one), `{`, `{"tlogs":[],`, 1),
		"bad second line": string(one) + "\n{",
	} {
		if _, err := trust.ParseSigstoreRoots([]byte(name + bad)[len(name):]); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSigstoreIdentityMatches(t *testing.T) {
	id := "https://github.com/acme/weather/.github/workflows/release.yml@refs/tags/v1.2.0"
	for _, c := range []struct {
		s    trust.SigstoreIdentity
		want bool
	}{
		{trust.SigstoreIdentity{Issuer: ghIssuer, Identity: id}, true},
		{trust.SigstoreIdentity{Issuer: ghIssuer + "/", Identity: id}, false},
		{trust.SigstoreIdentity{Issuer: ghIssuer, Identity: id + "x"}, false},
		{trust.SigstoreIdentity{Issuer: ghIssuer, IdentityPattern: `https://github\.com/acme/weather/\.github/workflows/release\.yml@refs/tags/v.*`}, true},
		// Patterns match the whole identity, never a part of it.
		{trust.SigstoreIdentity{Issuer: ghIssuer, IdentityPattern: `acme/weather`}, false},
		{trust.SigstoreIdentity{Issuer: ghIssuer, IdentityPattern: `https://github\.com/acme/weather/`}, false},
		// A GitHub pattern that leaves the owner or the repository open
		// matches nothing, even when it was never checked.
		{trust.SigstoreIdentity{Issuer: ghIssuer, IdentityPattern: `https://github\.com/acme/.*@refs/tags/v1\.2\.0`}, false},
		{trust.SigstoreIdentity{Issuer: ghIssuer, IdentityPattern: `a\.b|https://github\.com/acme/weather/.*`}, false},
		{trust.SigstoreIdentity{Issuer: ghIssuer, IdentityPattern: `https://github\.com/acme/weather/\.github/workflows/release\.yml@refs/tags/v1\.2\.0|https://github\.com/acme/weather/\.github/workflows/other\.yml@.*`}, true},
		{trust.SigstoreIdentity{Issuer: ghIssuer, Identity: id, Repository: "https://github.com/acme/weather"}, true},
		{trust.SigstoreIdentity{Issuer: ghIssuer, Identity: id, Repository: "https://github.com/acme/other"}, false},
		{trust.SigstoreIdentity{Issuer: ghIssuer, IdentityPattern: `x|acme`}, false},
	} {
		if got := c.s.Matches(ghIssuer, id, "https://github.com/acme/weather"); got != c.want {
			t.Errorf("%+v matches %v, want %v", c.s, got, c.want)
		}
	}
}

func TestSigstorePolicy(t *testing.T) {
	rootJSON, roots := rootsOf(t, 1)
	p := trust.New()
	id := trust.SigstoreIdentity{Issuer: ghIssuer, Identity: "https://github.com/acme/weather/.github/workflows/release.yml@refs/tags/v1"}
	if _, err := p.AddSigstore("acme", id); err == nil || !strings.Contains(err.Error(), "trusted root") {
		t.Fatalf("keyless signer without a trusted root: %v", err)
	}
	p.SigstoreRoots = roots
	for _, bad := range []trust.SigstoreIdentity{
		{Issuer: "http://issuer.example", Identity: "x"},
		{Issuer: ghIssuer},
		{Issuer: ghIssuer, Identity: "x", IdentityPattern: "x"},
		{Issuer: ghIssuer, IdentityPattern: ".*"},
		{Issuer: ghIssuer, IdentityPattern: "("},
		// Not a regular expression on its own: anchored, it would read as
		// "begins with ...x, or ends with ...y".
		{Issuer: ghIssuer, IdentityPattern: `https://github\.com/acme/weather/x)|(?:https://github\.com/acme/weather/y`},
		{Issuer: ghIssuer, Identity: "~https://github.com/acme/weather"},
		{Issuer: ghIssuer, Identity: "https://github.com/acme/weather x"},
		{Issuer: ghIssuer, Identity: "https://github.com/acme/weather", Repository: "http://github.com/acme/weather"},
	} {
		if _, err := p.AddSigstore("acme", bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if added, err := p.AddSigstore("acme", id); !added || err != nil {
		t.Fatal(added, err)
	}
	if added, _ := p.AddSigstore("acme", id); added {
		t.Fatal("added twice")
	}
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := trust.Parse(data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if prov := back.Provider("acme"); prov == nil || len(prov.Sigstore) != 1 || prov.Sigstore[0] != id || prov.EffectiveRequire() != trust.RequireKey {
		t.Fatalf("round trip: %+v", back.Providers)
	}
	if len(back.SigstoreRoots) != 1 || back.SigstoreMaterial() == nil {
		t.Fatal("trusted root lost")
	}
	// Every hand edit that would weaken the policy is an error.
	s := string(data)
	for name, edit := range map[string]string{
		"no roots":          strings.Replace(s, `"sigstoreTrustedRoots": [`, `"sigstoreTrustedRootsX": [`, 1),
		"unknown member":    strings.Replace(s, `"issuer": "`+ghIssuer+`"`, `"issuer": "`+ghIssuer+`", "subject": "x"`, 1),
		"match everything":  strings.Replace(s, `"identity": "`+id.Identity+`"`, `"identityPattern": ".*"`, 1),
		"empty signer list": strings.Replace(s, `"sigstore": [`, `"sigstore": [], "x": [`, 1),
		"listed twice":      strings.Replace(s, `"sigstore": [`, `"sigstore": [{"issuer": "`+ghIssuer+`", "identity": "`+id.Identity+`"},`, 1),
	} {
		if edit == s {
			t.Fatalf("%s: the edit changed nothing", name)
		}
		if _, err := trust.Parse([]byte(edit)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Keyless signers are trusted only through the policy's own roots.
	noRoots := *back
	noRoots.SigstoreRoots = nil
	if b, err := noRoots.Marshal(); err != nil {
		t.Fatal(err)
	} else if _, err := trust.Parse(b); err == nil || !strings.Contains(err.Error(), "trusts keyless signers but the policy has no sigstoreTrustedRoots") {
		t.Errorf("keyless signers without roots: %v\n%s", err, b)
	}
	// A provider with only keyless signers needs no keys.
	if !strings.Contains(s, `"sigstore"`) || strings.Contains(s, `"keys"`) {
		t.Fatalf("policy:\n%s", s)
	}
	_ = rootJSON
}

// Where the trusted roots were fetched from (TUF) is kept with them and
// read back; a record that is malformed, names an insecure mirror, or
// stands without trusted roots is refused when the policy is read.
func TestSigstoreRootSource(t *testing.T) {
	_, rs := rootsOf(t, 1)
	p := &trust.Policy{Unsigned: trust.Block, SigstoreRoots: rs}
	src := trust.SigstoreRootSource{Mirror: "https://tuf-repo-cdn.sigstore.dev", TUFRoot: "sha256:" + strings.Repeat("ab", 32),
		Fetched: time.Date(2026, 11, 26, 1, 2, 3, 0, time.UTC)}
	p.SigstoreRootSource = &src
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"sigstoreTrustedRootSource": {`) || !strings.Contains(string(data), `"fetched": "2026-11-26T01:02:03Z"`) {
		t.Fatalf("policy:\n%s", data)
	}
	q, err := trust.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if q.SigstoreRootSource == nil || *q.SigstoreRootSource != src {
		t.Fatalf("read back %+v", q.SigstoreRootSource)
	}
	good := `"sigstoreTrustedRootSource": {
    "tufMirror": "https://tuf-repo-cdn.sigstore.dev",
    "tufRoot": "sha256:` + strings.Repeat("ab", 32) + `",
    "fetched": "2026-11-26T01:02:03Z"
  }`
	if !strings.Contains(string(data), good) {
		t.Fatalf("layout changed:\n%s", data)
	}
	for name, bad := range map[string]string{
		"http mirror":    strings.Replace(good, "https://tuf-repo-cdn", "http://tuf-repo-cdn", 1),
		"user info":      strings.Replace(good, "https://tuf", "https://u:p@tuf", 1),
		"short digest":   strings.Replace(good, "sha256:abab", "sha256:ab", 1),
		"sha512":         strings.Replace(good, "sha256:", "sha512:", 1),
		"bad time":       strings.Replace(good, "2026-11-26T01:02:03Z", "yesterday", 1),
		"zero time":      strings.Replace(good, "2026-11-26T01:02:03Z", "0001-01-01T00:00:00Z", 1),
		"unknown member": strings.Replace(good, `"fetched"`, `"by": "x", "fetched"`, 1),
		"missing fetched": strings.Replace(good, `,
    "fetched": "2026-11-26T01:02:03Z"`, "", 1),
	} {
		if _, err := trust.Parse([]byte(strings.Replace(string(data), good, bad, 1))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// No trusted roots: the record stands for nothing.
	noRoots := `{"version": 1, "providers": [], ` + good + `}`
	if _, err := trust.Parse([]byte(noRoots)); err == nil {
		t.Error("source without trusted roots accepted")
	}
}
