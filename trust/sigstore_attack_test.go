package trust_test

import (
	"testing"

	"github.com/etdi-dev/etdi/trust"
)

// SPEC.md §16.2: a pattern matches the whole identity, and one that would
// trust anyone is refused. A pattern that is not a regular expression on
// its own (an unbalanced parenthesis) could escape the anchors, and
// "anything" has many spellings. Each of these would trust every identity
// of the issuer, in a policy edited by hand or with trust add.
func TestAttackSigstorePatternMatchesEverything(t *testing.T) {
	for _, pattern := range []string{
		`https://github\.com/acme/weather/\.github/workflows/release\.yml@refs/tags/v[0-9.]+)|(.*`,
		`x)|(?:`,
		`(.*)`,
		`.{0,}`,
		`(?s).*`,
		`[\s\S]*`,
		`.*|x`,
	} {
		id := trust.SigstoreIdentity{Issuer: ghIssuer, IdentityPattern: pattern}
		if err := trust.CheckSigstoreIdentity(id); err != nil {
			continue
		}
		for _, victim := range []string{"https://github.com/evil/tools/.github/workflows/x.yml@refs/heads/main", "mallory@evil.example"} {
			if id.Matches(ghIssuer, victim, "https://github.com/evil/tools") {
				t.Errorf("pattern %q is accepted and matches %q", pattern, victim)
				break
			}
		}
	}
}

// The pin database records a keyless signer as its trust entry's text
// (SPEC.md §16.3), but two different entries can have the same text: an
// issuer may contain a space, and an exact identity may begin with "~".
// An approval recorded under one entry then counts for the other.
func TestAttackSigstoreEntryTextsCollide(t *testing.T) {
	for _, pair := range [][2]trust.SigstoreIdentity{
		{{Issuer: "https://issuer.example/a b", Identity: "c@example.com"}, {Issuer: "https://issuer.example/a", Identity: "b c@example.com"}},
		{{Issuer: ghIssuer, Identity: `~x@example.com`}, {Issuer: ghIssuer, IdentityPattern: `x@example.com`}},
	} {
		if trust.CheckSigstoreIdentity(pair[0]) != nil || trust.CheckSigstoreIdentity(pair[1]) != nil {
			continue
		}
		if pair[0].String() == pair[1].String() {
			t.Errorf("two trust entries %+v and %+v are both recorded as %q", pair[0], pair[1], pair[0].String())
		}
	}
}
