package guard

import (
	"testing"

	"github.com/etdi-dev/etdi/internal/artifact"
)

// Only what etdi established itself is a verified artifact: a file it
// hashed, an image by digest or from the image store, npm's npx cache;
// never a project's lockfile, a URL or an unresolved launch.
func TestOriginVerified(t *testing.T) {
	for from, want := range map[string]bool{
		"file /usr/local/bin/server":       true,
		"npx cache /home/u/.npm/_npx/ab12": true,
		"image reference":                  true,
		"docker image inspect":             true,
		"package-lock.json /work/repo":     false,
		"npm-shrinkwrap.json /work/repo":   false,
		"uv.lock /work/repo":               false,
		"":                                 false,
		"files /x":                         false,
		"package-lock.json /work/file /x image inspect/": false,
	} {
		o := &Origin{launched: true, res: &artifact.Resolved{From: from}}
		if got := o.Verified(); got != want {
			t.Errorf("%q: verified %v, want %v", from, got, want)
		}
	}
	for _, o := range []*Origin{nil, {url: "https://mcp.example/mcp"}, {launched: true}} {
		if o.Verified() {
			t.Errorf("%+v verified", o)
		}
	}
}
