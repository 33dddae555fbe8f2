package artifact

import (
	"errors"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	i512, i384 := sri("sha512", "a"), sri("sha384", "a")
	npm := &Resolved{Artifact: Artifact{TypeNPM, "@acme/weather", "1.2.3", i512}}
	py := &Resolved{Artifact: Artifact{TypePyPI, "mcp-server-fetch", "0.6.2", sha("sdist")}, Digests: []string{sha("sdist"), sha("wheel")}}
	oci := &Resolved{Artifact: Artifact{TypeOCI, "alpine", "3", sha("index")}, Digests: []string{sha("index"), sha("manifest")}}
	file := &Resolved{Artifact: Artifact{TypeFile, "server", "", sha("server")}}
	other := Artifact{TypeOCI, "ghcr.io/acme/other", "", sha("other")}
	for _, tc := range []struct {
		got    *Resolved
		signed []Artifact
		want   string // "" for a match, else what the mismatch says
	}{
		// npm
		{npm, []Artifact{other, {TypeNPM, "@acme/weather", "1.2.3", i512}}, ""},
		{npm, []Artifact{{TypeNPM, "@acme/weather", "", i512}}, ""},
		{npm, []Artifact{{TypeNPM, "@acme/weather", "1.2.4", i512}}, "the bundle names npm @acme/weather 1.2.4; this launch runs version 1.2.3"},
		{npm, []Artifact{{TypeNPM, "@acme/weather", "1.2.3", sri("sha512", "b")}}, "the bundle names npm @acme/weather 1.2.3 " + sri("sha512", "b") + "; this launch runs " + i512},
		{npm, []Artifact{{TypeNPM, "@acme/weather", "1.2.3", i384}}, "the bundle signs a sha384 integrity and the lock records sha512"},
		{npm, []Artifact{{TypeNPM, "@acme/Weather", "1.2.3", i512}}, "the bundle names no npm @acme/weather; it names npm @acme/Weather 1.2.3"},
		{npm, []Artifact{other}, "the bundle names only oci artifacts; this launch runs an npm package"},
		{npm, nil, "the bundle names no artifacts"},
		// pypi: any file of the version, names normalized, versions padded.
		{py, []Artifact{{TypePyPI, "MCP_Server.Fetch", "0.6.2.0", sha("wheel")}}, ""},
		{py, []Artifact{{TypePyPI, "mcp-server-fetch", "", sha("sdist")}}, ""},
		{py, []Artifact{{TypePyPI, "mcp-server-fetch", "0.6.3", sha("sdist")}}, "version 0.6.2"},
		{py, []Artifact{{TypePyPI, "mcp-server-fetch", "0.6.2", sha("other")}}, "this launch runs " + sha("sdist") + " or " + sha("wheel")},
		{py, []Artifact{{TypePyPI, "mcp-server-time", "0.6.2", sha("sdist")}}, "the bundle names no pypi mcp-server-fetch"},
		{py, []Artifact{{TypeNPM, "mcp-server-fetch", "0.6.2", i512}, other}, "the bundle names only npm and oci artifacts; this launch runs a PyPI distribution"},
		// oci: name normalized, tag not compared, any digest of the image.
		{oci, []Artifact{{TypeOCI, "docker.io/library/alpine", "3.20", sha("manifest")}}, ""},
		{oci, []Artifact{{TypeOCI, "library/alpine", "", sha("index")}}, ""},
		{oci, []Artifact{{TypeOCI, "alpine", "3", sha("other")}}, "the bundle names oci alpine 3 " + sha("other")},
		{oci, []Artifact{{TypeOCI, "ghcr.io/acme/alpine", "3", sha("index")}}, "the bundle names no oci alpine"},
		// file: the digest alone.
		{file, []Artifact{{TypeFile, "renamed", "", sha("server")}}, ""},
		{file, []Artifact{{TypeFile, "server", "", sha("other")}}, "the bundle names file server " + sha("other")},
		{file, []Artifact{{TypeNPM, "server", "1.0.0", i512}}, "this launch runs a file"},
		// A signed artifact of the right type with an empty digest never
		// matches.
		{&Resolved{Artifact: Artifact{TypeFile, "x", "", ""}}, []Artifact{{TypeFile, "x", "", ""}}, "the bundle names file x"},
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
	for _, a := range []Artifact{
		{TypeNPM, "@modelcontextprotocol/server-everything", "2026.8.31", sri("sha512", "x")},
		{TypeNPM, "JSONStream", "", sri("sha256", "x")},
		{TypeNPM, "x", "1.0.0", sri("sha384", "x")},
		{TypePyPI, "mcp-server-fetch", "0.6.2", sha("x")},
		{TypePyPI, "Zope.Interface", "", sha("x")},
		{TypeOCI, "ghcr.io/github/github-mcp-server", "v0.4.0", sha("x")},
		{TypeOCI, "localhost:5000/team/srv", "", sha("x")},
		{TypeOCI, "alpine", "", sha("x")},
		{TypeFile, "weather-server", "", sha("x")},
		{TypeFile, "My Server.exe", "", sha("x")},
	} {
		if err := Validate(a); err != nil {
			t.Errorf("Validate(%+v) = %v", a, err)
		}
	}
	for _, tc := range []struct {
		a    Artifact
		want string
	}{
		{Artifact{"", "x", "", sha("x")}, "no type"},
		{Artifact{"deb", "x", "", sha("x")}, `type "deb" is unknown`},
		{Artifact{TypeFile, "", "", sha("x")}, "no name"},
		{Artifact{TypeFile, long, "", sha("x")}, "longer than 256"},
		{Artifact{TypeFile, "a\x1bb", "", sha("x")}, "control character"},
		{Artifact{TypeFile, "a\u202eb", "", sha("x")}, "control character"},
		{Artifact{TypeFile, "\xff", "", sha("x")}, "invalid UTF-8"},
		{Artifact{TypeFile, "bin/server", "", sha("x")}, "base name"},
		{Artifact{TypeFile, "..", "", sha("x")}, "base name"},
		{Artifact{TypeFile, "x", "1.0", sha("x")}, "no version"},
		{Artifact{TypeNPM, "a b", "1", sri("sha512", "x")}, "not an npm package name"},
		{Artifact{TypeNPM, "@scope/x@1.0.0", "", sri("sha512", "x")}, "not an npm package name"},
		{Artifact{TypePyPI, "-x", "1", sha("x")}, "not a Python distribution name"},
		{Artifact{TypeOCI, "ghcr.io/acme/x:1.0", "", sha("x")}, "not an image name"},
		{Artifact{TypeOCI, "acme/X", "", sha("x")}, "not an image name"},
		{Artifact{TypeOCI, "x", "bad tag", sha("x")}, "space"},
		{Artifact{TypeOCI, "x", ".tag", sha("x")}, "not an image tag"},
		{Artifact{TypeNPM, "x", long[:129], sri("sha512", "x")}, "version longer than 128"},
		{Artifact{TypeNPM, "x", "1", sha("x")}, "not an integrity string"},
		{Artifact{TypeNPM, "x", "1", "sha1-" + strings.Repeat("A", 27) + "="}, "not an integrity string"},
		{Artifact{TypeNPM, "x", "1", sri("sha512", "x")[:20]}, "not an integrity string"},
		{Artifact{TypeNPM, "x", "1", sri("sha512", "x") + " " + sri("sha256", "x")}, "not an integrity string"},
		{Artifact{TypeNPM, "x", "1", strings.Replace(sri("sha512", "x"), "sha512", "sha256", 1)}, "not an integrity string"},
		{Artifact{TypePyPI, "x", "1", "sha256:" + strings.ToUpper(hexA)}, "not sha256:<64 lowercase hex digits>"},
		{Artifact{TypeOCI, "x", "", "sha512:" + hexA}, "not sha256"},
		{Artifact{TypeFile, "x", "", sha("x")[:70]}, "not sha256"},
		{Artifact{TypeFile, "x", "", ""}, "not sha256"},
	} {
		err := Validate(tc.a)
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
