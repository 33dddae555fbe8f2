package guard

import (
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/testgen"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/trust"
)

// endpointBundle is a one-tool bundle of acme/inventory bound to the
// endpoints, signed by a key the returned policy trusts.
func endpointBundle(t *testing.T, endpoints ...string) ([]byte, *trust.Policy) {
	return trustedBundle(t, func(m *etdi.Manifest) { m.Server.Endpoints = endpoints })
}

// trustedBundle signs a one-tool manifest, after edit, with a new key the
// returned policy trusts for acme.
func trustedBundle(t *testing.T, edit func(m *etdi.Manifest)) ([]byte, *trust.Policy) {
	t.Helper()
	priv, err := keys.Generate(keys.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	s, err := keys.Signer(priv)
	if err != nil {
		t.Fatal(err)
	}
	m, err := etdi.ParseManifest(testgen.Manifest(1))
	if err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := sign.Sign(m, s, priv.Public(), sign.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := trust.New()
	if _, err := p.AddKey("acme", trust.Key{PublicKey: priv.Public()}); err != nil {
		t.Fatal(err)
	}
	return b.Marshal(), p
}

// CheckOrigin refuses, before anything starts, a server other than the
// one an out-of-band bundle was made for: a URL outside its endpoints, or
// a command started in place of its HTTP server. The server the bundle
// names passes, and a bundle that does not parse binds nothing (its check
// refuses it later).
func TestCheckOriginRefusesAnotherServer(t *testing.T) {
	bundle, p := endpointBundle(t, "https://mcp.acme.example/inventory")
	for name, o := range map[string]*Origin{
		"another URL":       {url: "https://evil.example/inventory"},
		"a command started": {launched: true},
	} {
		fs := CheckOrigin(bundle, o, p)
		if len(fs) != 1 || fs[0].Kind != finding.Impersonation || fs[0].Severity != finding.Error ||
			!strings.Contains(fs[0].Message, "served only from https://mcp.acme.example/inventory") {
			t.Errorf("%s: findings %+v, want one impersonation naming the bundle's endpoint", name, fs)
		}
	}
	if fs := CheckOrigin(bundle, &Origin{url: "https://mcp.acme.example/inventory/mcp"}, p); len(fs) != 0 {
		t.Errorf("the bundle's own endpoint: %+v", fs)
	}
	if fs := CheckOrigin([]byte(`{"dsseEnvelope":`), &Origin{url: "https://evil.example/"}, p); len(fs) != 0 {
		t.Errorf("a bundle that does not parse: %+v", fs)
	}
}
