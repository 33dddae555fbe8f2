package trust

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
)

// FuzzParse checks that a policy that parses marshals to one that parses
// to the same providers and keys.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob("../testdata/vectors/*/trust.json")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	// Where TUF-fetched roots came from.
	f.Add([]byte(`{"version":1,"providers":[],"sigstoreTrustedRoots":[{}],"sigstoreTrustedRootSource":{"tufMirror":"https://tuf-repo-cdn.sigstore.dev","tufRoot":"sha256:` + strings.Repeat("0", 64) + `","fetched":"2026-11-26T00:00:00Z"}}`))
	f.Add([]byte(`{"version":1,"providers":[],"sigstoreTrustedRootSource":{"tufMirror":"http://127.0.0.1:1","tufRoot":"sha256:","fetched":""}}`))
	f.Add([]byte(`{"version":1,"unsigned":{"rule":"warn","onUpdate":"allow"},"providers":[]}`))
	f.Add([]byte(`{"version":1,"unsigned":{"rule":"block"},"providers":[]}`))
	// Registry namespaces: good, in another case, a bad one.
	idp := `"idp":{"issuer":"https://idp.example","audience":"etdi","subjects":["acme-ci"]}`
	f.Add([]byte(`{"version":1,"providers":[{"id":"acme",` + idp + `,"registryNamespaces":["io.github.acme","com.acme.mcp"]}]}`))
	f.Add([]byte(`{"version":1,"providers":[{"id":"acme",` + idp + `,"registryNamespaces":["io.github.acme","IO.GITHUB.Acme"]}]}`))
	f.Add([]byte(`{"version":1,"providers":[{"id":"acme",` + idp + `,"registryNamespaces":["com..acme","-x.y","a/b"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			return
		}
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		q, err := Parse(b)
		if err != nil {
			t.Fatalf("marshalled policy does not parse: %v", err)
		}
		if len(q.Providers) != len(p.Providers) || q.Unsigned != p.Unsigned || q.OnUpdate() != p.OnUpdate() {
			t.Fatal("policy changed in a round trip")
		}
		if ps, qs := p.SigstoreRootSource, q.SigstoreRootSource; (ps == nil) != (qs == nil) ||
			ps != nil && (ps.Mirror != qs.Mirror || ps.TUFRoot != qs.TUFRoot || !ps.Fetched.Equal(qs.Fetched)) {
			t.Fatalf("trusted root source changed in a round trip: %+v, %+v", ps, qs)
		}
		for i := range p.Providers {
			if !slices.Equal(q.Providers[i].RegistryNamespaces, p.Providers[i].RegistryNamespaces) {
				t.Fatal("registry namespaces changed in a round trip")
			}
			for _, ns := range p.Providers[i].RegistryNamespaces {
				if etdi.ValidateRegistryNamespace(ns) != nil || !p.Providers[i].CoversRegistryName(ns+"/x") {
					t.Fatalf("namespace %q was accepted but does not cover its own names", ns)
				}
			}
			if len(q.Providers[i].Keys) != len(p.Providers[i].Keys) {
				t.Fatal("keys changed in a round trip")
			}
			for j := range p.Providers[i].Keys {
				a, b := p.Providers[i].Keys[j], q.Providers[i].Keys[j]
				if a.ID != b.ID || !a.NotBefore.Equal(b.NotBefore) || !a.NotAfter.Equal(b.NotAfter) {
					t.Fatal("key changed in a round trip")
				}
			}
		}
	})
}

// FuzzRegistryNames checks the comparisons of registry names and
// namespaces, which a registry's hostile answers reach: a namespace a
// policy accepts covers its own names and only names in a namespace the
// same as it, sameness is symmetric, and a GitHub identity is one only
// under https://github.com/.
func FuzzRegistryNames(f *testing.F) {
	f.Add("io.github.acme", "io.github.ACME/weather", "https://github.com/Acme/weather/.github/workflows/r.yml@refs/tags/v1")
	f.Add("com.acme", "com.acme.evil/x", "https://github.com/acme")
	f.Add("io.github.acme", "io.github.acme-evil/x", "https://github.com.evil/acme/x")
	f.Add("io.github.acm\u212a", "io.github.acmk/x", "https://github.com/acm\u212a/x/y")
	f.Fuzz(func(t *testing.T, ns, name, identity string) {
		other := etdi.RegistryNamespace(name)
		if etdi.SameRegistryNamespace(ns, other) != etdi.SameRegistryNamespace(other, ns) {
			t.Fatalf("etdi.SameRegistryNamespace(%q, %q) is not symmetric", ns, other)
		}
		if etdi.ValidateRegistryNamespace(ns) == nil {
			prov := &Provider{ID: "acme", RegistryNamespaces: []string{ns}}
			if !prov.CoversRegistryName(ns + "/x") {
				t.Fatalf("namespace %q does not cover its own names", ns)
			}
			if prov.CoversRegistryName(name) && !etdi.SameRegistryNamespace(ns, other) {
				t.Fatalf("namespace %q covers %q of another namespace", ns, name)
			}
		}
		if owner, ok := etdi.GitHubOwner(ns); ok && etdi.GitHubIdentityOf(identity, owner) {
			if !strings.HasPrefix(identity, "https://github.com/") || !strings.Contains(identity[len("https://github.com/"):], "/") {
				t.Fatalf("%q is taken for a workflow of %q", identity, owner)
			}
			if !strings.EqualFold(identity[len("https://github.com/"):len("https://github.com/")+len(owner)], owner) {
				t.Fatalf("%q is taken for a workflow of %q", identity, owner)
			}
		}
	})
}
