package artifactsyntax

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"strings"
	"testing"
)

// An SRI hash counts only with the digest size of its algorithm; names
// and tags follow their ecosystems' grammars.
func TestSyntax(t *testing.T) {
	s512 := sha512.Sum512([]byte("x"))
	s256 := sha256.Sum256([]byte("x"))
	b512, b256 := base64.StdEncoding.EncodeToString(s512[:]), base64.StdEncoding.EncodeToString(s256[:])
	for s, want := range map[string]bool{
		"sha512-" + b512:           true,
		"sha256-" + b256:           true,
		"sha256-" + b512:           false, // another algorithm's size
		"sha1-" + b256:             false,
		"sha512-" + b512 + " x":    false,
		"sha512-" + b512[:20]:      false,
		"sha512-" + b512 + "=====": false,
	} {
		if SRI(s) != want {
			t.Errorf("SRI(%q) = %v", s, !want)
		}
	}
	for _, c := range []struct {
		f    func(string) bool
		s    string
		want bool
	}{
		{NPMName, "@scope/name", true}, {NPMName, "a b", false}, {NPMName, "@scope/x@1", false},
		{PyPIName, "Zope.Interface", true}, {PyPIName, "-x", false},
		{ImageName, "ghcr.io/acme/srv", true}, {ImageName, "localhost:5000/srv", true}, {ImageName, "acme/X", false}, {ImageName, "x:1.0", false},
		{Tag, "v1.0", true}, {Tag, ".tag", false}, {Tag, strings.Repeat("a", 129), false},
		{SHA256, "sha256:" + strings.Repeat("ab", 32), true}, {SHA256, "sha256:" + strings.Repeat("AB", 32), false},
		{Printable, "My Server.exe", true}, {Printable, "a\x1bb", false}, {Printable, "a\u202eb", false}, {Printable, "\xff", false}, {Printable, "a\tb", false},
	} {
		if c.f(c.s) != c.want {
			t.Errorf("%q: got %v", c.s, !c.want)
		}
	}
}
