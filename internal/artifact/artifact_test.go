package artifact

import (
	"errors"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
)

func TestMatch(t *testing.T) {
	i512, i384 := sri("sha512", "a"), sri("sha384", "a")
	npm := &Resolved{Artifact: etdi.Artifact{Type: etdi.ArtifactNPM, Name: "@acme/weather", Version: "1.2.3", Digest: i512}}
	py := &Resolved{Artifact: etdi.Artifact{Type: etdi.ArtifactPyPI, Name: "mcp-server-fetch", Version: "0.6.2", Digest: sha("sdist")}, Digests: []string{sha("sdist"), sha("wheel")}}
	oci := &Resolved{Artifact: etdi.Artifact{Type: etdi.ArtifactOCI, Name: "alpine", Version: "3", Digest: sha("index")}, Digests: []string{sha("index"), sha("manifest")}}
	file := &Resolved{Artifact: etdi.Artifact{Type: etdi.ArtifactFile, Name: "server", Version: "", Digest: sha("server")}}
	other := etdi.Artifact{Type: etdi.ArtifactOCI, Name: "ghcr.io/acme/other", Version: "", Digest: sha("other")}
	for _, tc := range []struct {
		got    *Resolved
		signed []etdi.Artifact
		want   string // "" for a match, else what the mismatch says
	}{
		// npm
		{npm, []etdi.Artifact{other, {Type: etdi.ArtifactNPM, Name: "@acme/weather", Version: "1.2.3", Digest: i512}}, ""},
		{npm, []etdi.Artifact{{Type: etdi.ArtifactNPM, Name: "@acme/weather", Version: "", Digest: i512}}, ""},
		{npm, []etdi.Artifact{{Type: etdi.ArtifactNPM, Name: "@acme/weather", Version: "1.2.4", Digest: i512}}, "the bundle names npm @acme/weather 1.2.4; this launch runs version 1.2.3"},
		{npm, []etdi.Artifact{{Type: etdi.ArtifactNPM, Name: "@acme/weather", Version: "1.2.3", Digest: sri("sha512", "b")}}, "the bundle names npm @acme/weather 1.2.3 " + sri("sha512", "b") + "; this launch runs " + i512},
		{npm, []etdi.Artifact{{Type: etdi.ArtifactNPM, Name: "@acme/weather", Version: "1.2.3", Digest: i384}}, "the bundle signs a sha384 integrity and the lock records sha512"},
		{npm, []etdi.Artifact{{Type: etdi.ArtifactNPM, Name: "@acme/Weather", Version: "1.2.3", Digest: i512}}, "the bundle names no npm @acme/weather; it names npm @acme/Weather 1.2.3"},
		{npm, []etdi.Artifact{other}, "the bundle names only oci artifacts; this launch runs an npm package"},
		{npm, nil, "the bundle names no artifacts"},
		// pypi: any file of the version, names normalized, versions padded.
		{py, []etdi.Artifact{{Type: etdi.ArtifactPyPI, Name: "MCP_Server.Fetch", Version: "0.6.2.0", Digest: sha("wheel")}}, ""},
		{py, []etdi.Artifact{{Type: etdi.ArtifactPyPI, Name: "mcp-server-fetch", Version: "", Digest: sha("sdist")}}, ""},
		{py, []etdi.Artifact{{Type: etdi.ArtifactPyPI, Name: "mcp-server-fetch", Version: "0.6.3", Digest: sha("sdist")}}, "version 0.6.2"},
		{py, []etdi.Artifact{{Type: etdi.ArtifactPyPI, Name: "mcp-server-fetch", Version: "0.6.2", Digest: sha("other")}}, "this launch runs " + sha("sdist") + " or " + sha("wheel")},
		{py, []etdi.Artifact{{Type: etdi.ArtifactPyPI, Name: "mcp-server-time", Version: "0.6.2", Digest: sha("sdist")}}, "the bundle names no pypi mcp-server-fetch"},
		{py, []etdi.Artifact{{Type: etdi.ArtifactNPM, Name: "mcp-server-fetch", Version: "0.6.2", Digest: i512}, other}, "the bundle names only npm and oci artifacts; this launch runs a PyPI distribution"},
		// oci: name normalized, tag not compared, any digest of the image.
		{oci, []etdi.Artifact{{Type: etdi.ArtifactOCI, Name: "docker.io/library/alpine", Version: "3.20", Digest: sha("manifest")}}, ""},
		{oci, []etdi.Artifact{{Type: etdi.ArtifactOCI, Name: "library/alpine", Version: "", Digest: sha("index")}}, ""},
		{oci, []etdi.Artifact{{Type: etdi.ArtifactOCI, Name: "alpine", Version: "3", Digest: sha("other")}}, "the bundle names oci alpine 3 " + sha("other")},
		{oci, []etdi.Artifact{{Type: etdi.ArtifactOCI, Name: "ghcr.io/acme/alpine", Version: "3", Digest: sha("index")}}, "the bundle names no oci alpine"},
		// file: the digest alone.
		{file, []etdi.Artifact{{Type: etdi.ArtifactFile, Name: "renamed", Version: "", Digest: sha("server")}}, ""},
		{file, []etdi.Artifact{{Type: etdi.ArtifactFile, Name: "server", Version: "", Digest: sha("other")}}, "the bundle names file server " + sha("other")},
		{file, []etdi.Artifact{{Type: etdi.ArtifactNPM, Name: "server", Version: "1.0.0", Digest: i512}}, "this launch runs a file"},
		// A signed artifact of the right type with an empty digest never
		// matches.
		{&Resolved{Artifact: etdi.Artifact{Type: etdi.ArtifactFile, Name: "x", Version: "", Digest: ""}}, []etdi.Artifact{{Type: etdi.ArtifactFile, Name: "x", Version: "", Digest: ""}}, "the bundle names file x"},
	} {
		err := Match(tc.got, tc.signed)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Match(%+v, %+v) = %v, want a match", tc.got.Artifact, tc.signed, err)
		case tc.want != "":
			var me *MismatchError
			if !errors.As(err, &me) {
				t.Errorf("Match(%+v, %+v) = %v, want a *MismatchError", tc.got.Artifact, tc.signed, err)
				continue
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Match(%+v, %+v) = %v\nwant it to say %q", tc.got.Artifact, tc.signed, err, tc.want)
			}
			if me.Got != tc.got.Artifact || len(me.Signed) != len(tc.signed) {
				t.Errorf("Match: MismatchError %+v does not name both sides", me)
			}
		}
	}
}

func TestMoving(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string // "" for not moving, else what the message says
	}{
		{[]string{"npx", "-y", "pkg"}, "npx runs whatever version of pkg the registry calls latest; pin it: pkg@<version>"},
		{[]string{"npx", "pkg@latest"}, "pkg latest, a range or tag"},
		{[]string{"npx", "-y", "@scope/pkg@^1"}, "pin it: @scope/pkg@<version>"},
		{[]string{"npx", "-p", "pkg@~1.2", "cmd"}, "range or tag"},
		{[]string{"npx", "github:acme/srv"}, "git or URL spec"},
		{[]string{"pnpm", "dlx", "pkg"}, "pnpm dlx runs whatever version"},
		{[]string{"bunx", "pkg@next"}, "range or tag"},
		{[]string{"env", "A=1", "npx", "pkg"}, "latest"},
		{[]string{"npx", "-y", token}, "whatever version of (an argument not shown)"},
		{[]string{"uvx", "pkg"}, "pin it: pkg==<version>"},
		{[]string{"uvx", "pkg>=1"}, "range or tag"},
		{[]string{"uvx", "pkg@latest"}, "range or tag"},
		{[]string{"uvx", "--from", "git+https://github.com/acme/x", "x"}, "git or URL spec"},
		{[]string{"pipx", "run", "pkg"}, "pipx run runs whatever version of pkg"},
		{[]string{"uv", "tool", "run", "pkg==1.*"}, "range or tag"},
		{[]string{"docker", "run", "-i", "--rm", "ghcr.io/github/github-mcp-server"}, "ghcr.io/github/github-mcp-server has no tag: docker run runs whatever it points to; pin it by digest: ghcr.io/github/github-mcp-server@sha256:<digest>"},
		{[]string{"podman", "run", "img:latest"}, "img:latest is the latest tag"},
		{[]string{"docker", "--context", "x", "run", "img"}, "has no tag"},
		// Pinned, or nothing that moves.
		{[]string{"npx", "-y", "pkg@1.2.3"}, ""},
		{[]string{"npx", "-y", "@scope/pkg@1.2.3-beta.1"}, ""},
		{[]string{"npx", "./local"}, ""},
		{[]string{"uvx", "pkg==1.0"}, ""},
		{[]string{"uvx", "pkg[cli]===1.0"}, ""},
		{[]string{"uvx", "ruff@0.6.0"}, ""},
		{[]string{"pipx", "run", "--spec", "pkg==1", "pkg"}, ""},
		{[]string{"docker", "run", "img@sha256:" + hexA}, ""},
		{[]string{"docker", "run", "img:latest@sha256:" + hexA}, ""},
		{[]string{"docker", "run", "img:1.2"}, ""},
		{[]string{"node", "server.js"}, ""},
		{[]string{"/usr/bin/weather"}, ""},
		{[]string{"npx"}, ""},
		{nil, ""},
	} {
		moving, msg := Moving(tc.argv)
		if moving != (tc.want != "") || !strings.Contains(msg, tc.want) {
			t.Errorf("Moving(%q) = %v, %q; want %v, %q", tc.argv, moving, msg, tc.want != "", tc.want)
		}
		if strings.Contains(msg, token) {
			t.Errorf("Moving(%q) = %q: shows a credential", tc.argv, msg)
		}
	}
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("a", 257)
	for _, a := range []etdi.Artifact{
		{Type: etdi.ArtifactNPM, Name: "@modelcontextprotocol/server-everything", Version: "2026.8.31", Digest: sri("sha512", "x")},
		{Type: etdi.ArtifactNPM, Name: "JSONStream", Version: "", Digest: sri("sha256", "x")},
		{Type: etdi.ArtifactNPM, Name: "x", Version: "1.0.0", Digest: sri("sha384", "x")},
		{Type: etdi.ArtifactPyPI, Name: "mcp-server-fetch", Version: "0.6.2", Digest: sha("x")},
		{Type: etdi.ArtifactPyPI, Name: "Zope.Interface", Version: "", Digest: sha("x")},
		{Type: etdi.ArtifactOCI, Name: "ghcr.io/github/github-mcp-server", Version: "v0.4.0", Digest: sha("x")},
		{Type: etdi.ArtifactOCI, Name: "localhost:5000/team/srv", Version: "", Digest: sha("x")},
		{Type: etdi.ArtifactOCI, Name: "alpine", Version: "", Digest: sha("x")},
		{Type: etdi.ArtifactFile, Name: "weather-server", Version: "", Digest: sha("x")},
		{Type: etdi.ArtifactFile, Name: "My Server.exe", Version: "", Digest: sha("x")},
	} {
		if err := etdi.ValidateArtifact(a); err != nil {
			t.Errorf("Validate(%+v) = %v", a, err)
		}
	}
	for _, tc := range []struct {
		a    etdi.Artifact
		want string
	}{
		{etdi.Artifact{Type: "", Name: "x", Version: "", Digest: sha("x")}, "no type"},
		{etdi.Artifact{Type: "deb", Name: "x", Version: "", Digest: sha("x")}, `type "deb" is unknown`},
		{etdi.Artifact{Type: etdi.ArtifactFile, Name: "", Version: "", Digest: sha("x")}, "no name"},
		{etdi.Artifact{Type: etdi.ArtifactFile, Name: long, Version: "", Digest: sha("x")}, "longer than 256"},
		{etdi.Artifact{Type: etdi.ArtifactFile, Name: "a\x1bb", Version: "", Digest: sha("x")}, "control character"},
		{etdi.Artifact{Type: etdi.ArtifactFile, Name: "a\u202eb", Version: "", Digest: sha("x")}, "control character"},
		{etdi.Artifact{Type: etdi.ArtifactFile, Name: "\xff", Version: "", Digest: sha("x")}, "invalid UTF-8"},
		{etdi.Artifact{Type: etdi.ArtifactFile, Name: "bin/server", Version: "", Digest: sha("x")}, "base name"},
		{etdi.Artifact{Type: etdi.ArtifactFile, Name: "..", Version: "", Digest: sha("x")}, "base name"},
		{etdi.Artifact{Type: etdi.ArtifactFile, Name: "x", Version: "1.0", Digest: sha("x")}, "no version"},
		{etdi.Artifact{Type: etdi.ArtifactNPM, Name: "a b", Version: "1", Digest: sri("sha512", "x")}, "not an npm package name"},
		{etdi.Artifact{Type: etdi.ArtifactNPM, Name: "@scope/x@1.0.0", Version: "", Digest: sri("sha512", "x")}, "not an npm package name"},
		{etdi.Artifact{Type: etdi.ArtifactPyPI, Name: "-x", Version: "1", Digest: sha("x")}, "not a Python distribution name"},
		{etdi.Artifact{Type: etdi.ArtifactOCI, Name: "ghcr.io/acme/x:1.0", Version: "", Digest: sha("x")}, "not an image name"},
		{etdi.Artifact{Type: etdi.ArtifactOCI, Name: "acme/X", Version: "", Digest: sha("x")}, "not an image name"},
		{etdi.Artifact{Type: etdi.ArtifactOCI, Name: "x", Version: "bad tag", Digest: sha("x")}, "space"},
		{etdi.Artifact{Type: etdi.ArtifactOCI, Name: "x", Version: ".tag", Digest: sha("x")}, "not an image tag"},
		{etdi.Artifact{Type: etdi.ArtifactNPM, Name: "x", Version: long[:129], Digest: sri("sha512", "x")}, "version longer than 128"},
		{etdi.Artifact{Type: etdi.ArtifactNPM, Name: "x", Version: "1", Digest: sha("x")}, "not an integrity string"},
		{etdi.Artifact{Type: etdi.ArtifactNPM, Name: "x", Version: "1", Digest: "sha1-" + strings.Repeat("A", 27) + "="}, "not an integrity string"},
		{etdi.Artifact{Type: etdi.ArtifactNPM, Name: "x", Version: "1", Digest: sri("sha512", "x")[:20]}, "not an integrity string"},
		{etdi.Artifact{Type: etdi.ArtifactNPM, Name: "x", Version: "1", Digest: sri("sha512", "x") + " " + sri("sha256", "x")}, "not an integrity string"},
		{etdi.Artifact{Type: etdi.ArtifactNPM, Name: "x", Version: "1", Digest: strings.Replace(sri("sha512", "x"), "sha512", "sha256", 1)}, "not an integrity string"},
		{etdi.Artifact{Type: etdi.ArtifactPyPI, Name: "x", Version: "1", Digest: "sha256:" + strings.ToUpper(hexA)}, "not sha256:<64 lowercase hex digits>"},
		{etdi.Artifact{Type: etdi.ArtifactOCI, Name: "x", Version: "", Digest: "sha512:" + hexA}, "not sha256"},
		{etdi.Artifact{Type: etdi.ArtifactFile, Name: "x", Version: "", Digest: sha("x")[:70]}, "not sha256"},
		{etdi.Artifact{Type: etdi.ArtifactFile, Name: "x", Version: "", Digest: ""}, "not sha256"},
	} {
		err := etdi.ValidateArtifact(tc.a)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want it to say %q", tc.a, err, tc.want)
		}
	}
}

func TestPEP(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"1.0", "1.0.0"}, {"1", "1.0.0.0"}, {"v1.2", "1.2"}, {"1.0RC1", "1.0rc1"}, {"1.01", "1.1"}, {"1.0.0.post1", "1.0.post1"},
	} {
		if pep440(tc.a) != pep440(tc.b) {
			t.Errorf("pep440(%q) = %q, pep440(%q) = %q", tc.a, pep440(tc.a), tc.b, pep440(tc.b))
		}
	}
	for _, tc := range []struct{ a, b string }{{"1.0", "1.0.1"}, {"1.0", "10"}, {"1.0a1", "1.0"}} {
		if pep440(tc.a) == pep440(tc.b) {
			t.Errorf("pep440(%q) == pep440(%q)", tc.a, tc.b)
		}
	}
	if pep503("Foo.Bar__baz-") != "foo-bar-baz-" {
		t.Errorf("pep503 = %q", pep503("Foo.Bar__baz-"))
	}
}
