package registrytest

import (
	"context"
	"crypto"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/trust"
)

// SchemaURL is the server.json schema the registry requires documents to
// name.
const SchemaURL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

// Provider is what publishes signed entries to a registry of this
// package: provider acme's key, which Policy trusts, and Files, which
// hosts bundles on 127.0.0.1 as a release page hosts the files a
// server.json names. Its names carry a suffix of their own, so that tests
// sharing a registry never publish the same name twice.
type Provider struct {
	Signer crypto.Signer
	Policy *trust.Policy
	Files  *Files
	Suffix string
	t      testing.TB
}

// NewProvider is a provider with a new key.
func NewProvider(t testing.TB) *Provider {
	t.Helper()
	priv, err := keys.Generate(keys.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	p := trust.New()
	if _, err := p.AddKey("acme", trust.Key{PublicKey: priv.Public()}); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 5)
	rand.Read(b)
	return &Provider{Signer: priv, Policy: p, Files: NewFiles(t), Suffix: fmt.Sprintf("t%x", b), t: t}
}

// Name is the registry name io.github.OWNER/SERVER, the owner with the
// provider's suffix.
func (p *Provider) Name(owner, server string) string {
	return "io.github." + owner + p.Suffix + "/" + server
}

// NPMIntegrity is a syntactically valid npm integrity string made from
// seed.
func NPMIntegrity(seed string) string {
	h := make([]byte, 64)
	copy(h, seed)
	return "sha512-" + base64.StdEncoding.EncodeToString(h)
}

// NPMBundle signs a manifest of provider acme for the server registered as
// regName, made of npm package pkg@version (see [Provider.Bundle]).
func (p *Provider) NPMBundle(regName, pkg, version string, tools ...string) []byte {
	p.t.Helper()
	return p.Bundle(regName, version, []any{map[string]any{"type": "npm", "name": pkg, "version": version, "digest": NPMIntegrity(pkg + version)}}, tools...)
}

// Bundle signs a manifest of provider acme for the server registered as
// regName (none: the manifest names no registry entry), made of the
// artifacts given, with the tools named (default get_weather). The
// server's name, and so its pin identity acme:NAME, is the last part of
// regName.
func (p *Provider) Bundle(regName, version string, artifacts []any, tools ...string) []byte {
	p.t.Helper()
	if len(tools) == 0 {
		tools = []string{"get_weather"}
	}
	var ts []any
	for _, name := range tools {
		ts = append(ts, map[string]any{
			"version":     "1.0.0",
			"permissions": []any{map[string]any{"scope": "weather:read", "description": "Reads forecasts"}},
			"definition": map[string]any{"name": name, "description": "Get the weather for a city.",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}},
		})
	}
	server := "weather"
	if i := strings.LastIndex(regName, "/"); i >= 0 {
		server = regName[i+1:]
	}
	srv := map[string]any{"name": server, "version": version, "artifacts": artifacts}
	if regName != "" {
		srv["registryName"] = regName
	}
	doc, err := json.Marshal(map[string]any{"provider": map[string]any{"id": "acme", "name": "ACME"}, "server": srv, "tools": ts})
	if err != nil {
		p.t.Fatal(err)
	}
	m, err := etdi.ParseManifest(doc)
	if err != nil {
		p.t.Fatal(err)
	}
	s, err := keys.Signer(p.Signer)
	if err != nil {
		p.t.Fatal(err)
	}
	b, err := sign.Sign(m, s, p.Signer.Public(), sign.Options{})
	if err != nil {
		p.t.Fatal(err)
	}
	return b.Marshal()
}

// ServerJSON is a server.json for name@version with one npm package
// pkg@pkgVersion, naming the bundle at path on Files (bundle nil: an
// unsigned entry). It does not put the bundle there.
func (p *Provider) ServerJSON(name, version, pkg, pkgVersion, path string, bundle []byte) []byte {
	p.t.Helper()
	doc, err := json.Marshal(map[string]any{
		"$schema": SchemaURL, "name": name, "description": "Weather forecasts", "version": version,
		"packages": []any{map[string]any{"registryType": "npm", "identifier": pkg, "version": pkgVersion, "transport": map[string]any{"type": "stdio"}}},
	})
	if err != nil {
		p.t.Fatal(err)
	}
	if bundle == nil {
		return doc
	}
	out, err := registry.SetEtdiMeta(doc, registry.EtdiMeta{Bundle: p.Files.URL(path), Digest: registry.Digest(bundle)})
	if err != nil {
		p.t.Fatal(err)
	}
	return out
}

// Approve approves every tool of bundle into the pin database at db, as
// etdi pin approve does after a check, and returns the server's pin
// identity.
func (p *Provider) Approve(db string, bundle []byte) string {
	p.t.Helper()
	r, err := guard.Observe(context.Background(), nil, guard.Options{Policy: p.Policy, Bundle: bundle})
	if err != nil || r.Blocked() {
		p.t.Fatalf("observing the bundle: %v %+v", err, r.Findings)
	}
	s, err := pin.Open(db, pin.Options{})
	if err != nil {
		p.t.Fatal(err)
	}
	defer s.Close()
	if _, refused, err := s.Approve(r.Observation, pin.ApproveOptions{By: "test"}); err != nil || len(refused) > 0 {
		p.t.Fatalf("approving: %v %+v", err, refused)
	}
	return r.Server
}

// Files serves files on 127.0.0.1, as a release page serves the files a
// server.json names; what it serves can be replaced or removed.
type Files struct {
	mu    sync.Mutex
	files map[string][]byte
	base  string
	// Handler, when set before a request, answers instead.
	Handler http.HandlerFunc
}

// NewFiles serves no files until Put, until the test ends.
func NewFiles(t testing.TB) *Files {
	t.Helper()
	f := &Files{files: map[string][]byte{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	f.base = "http://" + ln.Addr().String()
	return f
}

func (f *Files) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.Handler != nil {
		f.Handler(w, r)
		return
	}
	b, ok := f.Get(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Write(b)
}

// Get is the file served at path.
func (f *Files) Get(path string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.files[path]
	return b, ok
}

// Put serves b at path.
func (f *Files) Put(path string, b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[path] = b
}

// Remove stops serving path.
func (f *Files) Remove(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.files, path)
}

// URL is the address of path.
func (f *Files) URL(path string) string { return f.base + path }
