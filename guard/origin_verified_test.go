package guard

import (
	"testing"

	"github.com/etdi-dev/etdi/internal/artifact"
)

// Only what etdi established itself is a verified artifact: a file it
// hashed, an image by digest or from the image store, npm's npx cache;
// never a project's lockfile, a URL or an unresolved launch. A lockfile
// in a directory whose name ends like the image store's answer is still
// a lockfile.
func TestOriginVerified(t *testing.T) {
	for _, c := range []struct {
		typ, from string
		want      bool
	}{
		{artifact.TypeFile, "file /usr/local/bin/server", true},
		{artifact.TypeNPM, "npx cache /home/u/.npm/_npx/ab12", true},
		{artifact.TypeOCI, "image reference", true},
		{artifact.TypeOCI, "docker image inspect", true},
		{artifact.TypeNPM, "package-lock.json /work/repo", false},
		{artifact.TypeNPM, "npm-shrinkwrap.json /work/repo", false},
		{artifact.TypePyPI, "uv.lock /work/repo", false},
		{artifact.TypeNPM, "", false},
		{artifact.TypeFile, "files /x", false},
		{artifact.TypeNPM, "package-lock.json /work/file /x image inspect/", false},
		{artifact.TypeNPM, "package-lock.json /work/demo image inspect", false},
		{artifact.TypeNPM, ".package-lock.json /work/x image reference", false},
		{artifact.TypePyPI, "uv.lock /work/demo image inspect", false},
		{artifact.TypePyPI, "uv.lock /work/npx cache ", false},
		{artifact.TypeNPM, "file /usr/local/bin/server", false},
	} {
		o := &Origin{launched: true, res: &artifact.Resolved{Artifact: artifact.Artifact{Type: c.typ}, From: c.from}}
		if got := o.Verified(); got != c.want {
			t.Errorf("%s %q: verified %v, want %v", c.typ, c.from, got, c.want)
		}
	}
	for _, o := range []*Origin{nil, {url: "https://mcp.example/mcp"}, {launched: true}} {
		if o.Verified() {
			t.Errorf("%+v verified", o)
		}
	}
}
