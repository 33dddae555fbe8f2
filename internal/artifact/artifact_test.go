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
