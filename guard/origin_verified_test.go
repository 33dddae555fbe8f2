package guard

import (
	"testing"

	"github.com/etdi-dev/etdi"
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
		{etdi.ArtifactFile, "file /usr/local/bin/server", true},
		{etdi.ArtifactNPM, "npx cache /home/u/.npm/_npx/ab12", true},
		{etdi.ArtifactOCI, "image reference", true},
		{etdi.ArtifactOCI, "docker image inspect", true},
		{etdi.ArtifactNPM, "package-lock.json /work/repo", false},
		{etdi.ArtifactNPM, "npm-shrinkwrap.json /work/repo", false},
		{etdi.ArtifactPyPI, "uv.lock /work/repo", false},
		{etdi.ArtifactNPM, "", false},
		{etdi.ArtifactFile, "files /x", false},
		{etdi.ArtifactNPM, "package-lock.json /work/file /x image inspect/", false},
		{etdi.ArtifactNPM, "package-lock.json /work/demo image inspect", false},
		{etdi.ArtifactNPM, ".package-lock.json /work/x image reference", false},
		{etdi.ArtifactPyPI, "uv.lock /work/demo image inspect", false},
		{etdi.ArtifactPyPI, "uv.lock /work/npx cache ", false},
		{etdi.ArtifactNPM, "file /usr/local/bin/server", false},
	} {
		o := &Origin{launched: true, res: &artifact.Resolved{Artifact: etdi.Artifact{Type: c.typ}, From: c.from}}
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
