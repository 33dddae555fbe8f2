package registry

import (
	"testing"

	"github.com/etdi-dev/etdi"
)

// FuzzManifestServer: whatever a server.json holds, deriving a manifest's
// server section from it never panics, and a section derived without a
// problem is one Compare finds in agreement with the server.json and
// that a manifest can hold.
func FuzzManifestServer(f *testing.F) {
	f.Add([]byte(providerJSON))
	f.Add([]byte(weatherJSON))
	f.Add([]byte(`{"name":"io.github.acme/w","version":"1","remotes":[{"type":"sse","url":"https://{t}.a.example/mcp"}]}`))
	f.Add([]byte(`{"name":"io.github.acme/w","version":"1","packages":[{"registryType":"oci","identifier":"ghcr.io/a/w:1.0"},{"registryType":"pypi","identifier":"w","version":"1"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseServerJSON(data)
		if err != nil {
			return
		}
		// A resolver that answers with what the package names, as a
		// launch of exactly that package would.
		resolve := func(p Package) (etdi.Artifact, error) {
			name, tag, _ := splitImage(p.Identifier)
			if p.RegistryType != PackageOCI {
				name, tag = p.Identifier, p.Version
			} else if tag == "" {
				tag = p.Version
			}
			if p.RegistryType == PackageMCPB {
				return etdi.Artifact{Type: etdi.ArtifactMCPB, Name: "w", Version: p.Version, Digest: "sha256:" + p.FileSHA256}, nil
			}
			return etdi.Artifact{Type: p.RegistryType, Name: name, Version: tag, Digest: "sha512-AAAA"}, nil
		}
		server, problems, err := ManifestServer(s, resolve)
		if err != nil || len(problems) > 0 {
			return
		}
		if got := Compare(s, server); len(got) != 0 {
			t.Fatalf("derived %+v without a problem, but Compare finds %v", server, got)
		}
		if server.RegistryName != s.Name || server.Version != s.Version {
			t.Fatalf("derived %+v from %s %s", server, s.Name, s.Version)
		}
		for _, e := range server.Endpoints {
			if err := etdi.ValidateEndpoint(e); err != nil {
				t.Fatalf("endpoint %q: %v", e, err)
			}
		}
	})
}
