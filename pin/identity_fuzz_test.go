package pin

import (
	"strings"
	"testing"
)

// FuzzArtifactIdentity: whatever a saved listing's "served" says, an
// identity is only ever the whole text, of a known artifact type, with a
// digest and no control characters; an npm or PyPI one names an exact
// version.
func FuzzArtifactIdentity(f *testing.F) {
	f.Add(npmTime)
	f.Add("file server.py sha256:aa")
	f.Add("oci docker.io/mcp/time@latest sha256:aa")
	f.Add("npm @scope/pkg sha512-AA==")
	f.Add("url https://x:443/mcp")
	f.Add("npm a@1 b c")
	f.Fuzz(func(t *testing.T, served string) {
		id, ok := ArtifactIdentity(served)
		if !ok {
			if id != "" {
				t.Fatalf("%q: identity %q without ok", served, id)
			}
			return
		}
		if id != served {
			t.Fatalf("%q: identity %q", served, id)
		}
		fields := strings.Split(served, " ")
		if len(fields) != 3 || fields[1] == "" || fields[2] == "" {
			t.Fatalf("%q: not TYPE NAME DIGEST", served)
		}
		switch fields[0] {
		case "npm", "pypi":
			if i := strings.LastIndexByte(fields[1], '@'); i <= 0 || i == len(fields[1])-1 {
				t.Fatalf("%q: no exact version", served)
			}
		case "oci", "file":
		default:
			t.Fatalf("%q: type %q", served, fields[0])
		}
		for _, r := range served {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("%q: control character", served)
			}
		}
	})
}
