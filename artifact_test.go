package etdi

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// sri returns the SRI integrity string of data under alg (sha512, sha384
// or sha256).
func sri(alg, data string) string {
	var sum []byte
	switch alg {
	case "sha512":
		s := sha512.Sum512([]byte(data))
		sum = s[:]
	case "sha384":
		s := sha512.Sum384([]byte(data))
		sum = s[:]
	default:
		s := sha256.Sum256([]byte(data))
		sum = s[:]
	}
	return alg + "-" + base64.StdEncoding.EncodeToString(sum)
}

func sha(data string) string {
	s := sha256.Sum256([]byte(data))
	return "sha256:" + hex.EncodeToString(s[:])
}

var hexA = strings.Repeat("ab", 32)

// A manifest's artifacts are checked before anything is signed or pinned.
// Attack: names, versions and digests that another tool would read another
// way (control characters, paths, tags in names, wrong digest forms) are
// refused; the real names of each ecosystem are not.
func TestValidateArtifact(t *testing.T) {
	long := strings.Repeat("a", 257)
	for _, a := range []Artifact{
		{Type: ArtifactNPM, Name: "@modelcontextprotocol/server-everything", Version: "2026.8.31", Digest: sri("sha512", "x")},
		{Type: ArtifactNPM, Name: "JSONStream", Version: "", Digest: sri("sha256", "x")},
		{Type: ArtifactNPM, Name: "x", Version: "1.0.0", Digest: sri("sha384", "x")},
		{Type: ArtifactNPM, Name: strings.Repeat("a", 214), Version: "1.0.0", Digest: sri("sha512", "x")},
		{Type: ArtifactPyPI, Name: "mcp-server-fetch", Version: "0.6.2", Digest: sha("x")},
		{Type: ArtifactPyPI, Name: "Zope.Interface", Version: "", Digest: sha("x")},
		{Type: ArtifactOCI, Name: "ghcr.io/github/github-mcp-server", Version: "v0.4.0", Digest: sha("x")},
		{Type: ArtifactOCI, Name: "localhost:5000/team/srv", Version: "", Digest: sha("x")},
		{Type: ArtifactOCI, Name: "alpine", Version: "", Digest: sha("x")},
		{Type: ArtifactFile, Name: "weather-server", Version: "", Digest: sha("x")},
		{Type: ArtifactFile, Name: "My Server.exe", Version: "", Digest: sha("x")},
		{Type: ArtifactMCPB, Name: "weather", Version: "1.2.0", Digest: sha("x")},
	} {
		if err := ValidateArtifact(a); err != nil {
			t.Errorf("ValidateArtifact(%+v) = %v", a, err)
		}
	}
	for _, tc := range []struct {
		a    Artifact
		want string
	}{
		{Artifact{Type: "", Name: "x", Version: "", Digest: sha("x")}, "no type"},
		{Artifact{Type: "deb", Name: "x", Version: "", Digest: sha("x")}, `type "deb" is unknown`},
		{Artifact{Type: ArtifactFile, Name: "", Version: "", Digest: sha("x")}, "no name"},
		{Artifact{Type: ArtifactFile, Name: long, Version: "", Digest: sha("x")}, "longer than 256"},
		{Artifact{Type: ArtifactFile, Name: "a\x1bb", Version: "", Digest: sha("x")}, "control character"},
		{Artifact{Type: ArtifactFile, Name: "a\u202eb", Version: "", Digest: sha("x")}, "control character"},
		{Artifact{Type: ArtifactFile, Name: "\xff", Version: "", Digest: sha("x")}, "invalid UTF-8"},
		{Artifact{Type: ArtifactFile, Name: "bin/server", Version: "", Digest: sha("x")}, "base name"},
		{Artifact{Type: ArtifactFile, Name: "..", Version: "", Digest: sha("x")}, "base name"},
		{Artifact{Type: ArtifactFile, Name: "x", Version: "1.0", Digest: sha("x")}, "no version"},
		{Artifact{Type: ArtifactNPM, Name: "a b", Version: "1", Digest: sri("sha512", "x")}, "not an npm package name"},
		{Artifact{Type: ArtifactNPM, Name: strings.Repeat("a", 215), Version: "1", Digest: sri("sha512", "x")}, "not an npm package name"},
		{Artifact{Type: ArtifactNPM, Name: "@scope/x@1.0.0", Version: "", Digest: sri("sha512", "x")}, "not an npm package name"},
		{Artifact{Type: ArtifactPyPI, Name: "-x", Version: "1", Digest: sha("x")}, "not a Python distribution name"},
		{Artifact{Type: ArtifactOCI, Name: "ghcr.io/acme/x:1.0", Version: "", Digest: sha("x")}, "not an image name"},
		{Artifact{Type: ArtifactOCI, Name: "acme/X", Version: "", Digest: sha("x")}, "not an image name"},
		{Artifact{Type: ArtifactOCI, Name: "x", Version: "bad tag", Digest: sha("x")}, "space"},
		{Artifact{Type: ArtifactOCI, Name: "x", Version: ".tag", Digest: sha("x")}, "not an image tag"},
		{Artifact{Type: ArtifactNPM, Name: "x", Version: long[:129], Digest: sri("sha512", "x")}, "version longer than 128"},
		{Artifact{Type: ArtifactNPM, Name: "x", Version: "1", Digest: sha("x")}, "not an integrity string"},
		{Artifact{Type: ArtifactNPM, Name: "x", Version: "1", Digest: "sha1-" + strings.Repeat("A", 27) + "="}, "not an integrity string"},
		{Artifact{Type: ArtifactNPM, Name: "x", Version: "1", Digest: sri("sha512", "x")[:20]}, "not an integrity string"},
		{Artifact{Type: ArtifactNPM, Name: "x", Version: "1", Digest: sri("sha512", "x") + " " + sri("sha256", "x")}, "not an integrity string"},
		{Artifact{Type: ArtifactNPM, Name: "x", Version: "1", Digest: strings.Replace(sri("sha512", "x"), "sha512", "sha256", 1)}, "not an integrity string"},
		{Artifact{Type: ArtifactPyPI, Name: "x", Version: "1", Digest: "sha256:" + strings.ToUpper(hexA)}, "not sha256:<64 lowercase hex digits>"},
		{Artifact{Type: ArtifactOCI, Name: "x", Version: "", Digest: "sha512:" + hexA}, "not sha256"},
		{Artifact{Type: ArtifactFile, Name: "x", Version: "", Digest: sha("x")[:70]}, "not sha256"},
		{Artifact{Type: ArtifactMCPB, Name: "weather", Version: "1.2.0", Digest: sri("sha512", "x")}, "not sha256"},
		{Artifact{Type: ArtifactMCPB, Name: "", Version: "1.2.0", Digest: sha("x")}, "no name"},
		{Artifact{Type: ArtifactFile, Name: "x", Version: "", Digest: ""}, "not sha256"},
	} {
		err := ValidateArtifact(tc.a)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ValidateArtifact(%+v) = %v, want it to say %q", tc.a, err, tc.want)
		}
	}
}

// An artifact names itself in messages with its digest cut short.
func TestArtifactString(t *testing.T) {
	a := Artifact{Type: ArtifactNPM, Name: "@acme/weather", Version: "1.2.0", Digest: sri("sha512", "x")}
	if got, want := a.String(), "npm @acme/weather@1.2.0 ("+a.Digest[:24]+"…)"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	f := Artifact{Type: ArtifactFile, Name: "srv", Digest: "sha256:ab"}
	if got := f.String(); got != "file srv (sha256:ab)" {
		t.Fatalf("got %q", got)
	}
}
