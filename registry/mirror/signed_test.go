package mirror_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/registry/audit"
	"github.com/etdi-dev/etdi/registry/mirror"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/trust"
)

// provider signs bundles as provider acme, hosts them on 127.0.0.1 as a
// release page would, and publishes server.json documents naming them to
// the real registry.
type provider struct {
	t      testing.TB
	signer crypto.Signer
	policy *trust.Policy
	files  *files
	suffix string
}

func newProvider(t testing.TB) *provider {
	t.Helper()
	priv, err := keys.Generate(keys.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	p := trust.New()
	if _, err := p.AddKey("acme", trust.Key{PublicKey: priv.Public()}); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	rand.Read(b)
	return &provider{t: t, signer: priv, policy: p, files: newFiles(t), suffix: fmt.Sprintf("%x", b)}
}

// name is a registry name in namespace io.github.OWNER (with the test's
// suffix, so that runs sharing the registry do not collide).
func (p *provider) name(owner, server string) string {
	return "io.github." + owner + p.suffix + "/" + server
}

// bundle signs the manifest of server srv (pin identity acme:srv), bound
// to registry name regName and npm package pkg@version, with one tool.
func (p *provider) bundle(srv, regName, pkg, version string) []byte {
	p.t.Helper()
	integrity := make([]byte, 64)
	copy(integrity, pkg+version)
	doc, err := json.Marshal(map[string]any{
		"provider": map[string]any{"id": "acme", "name": "ACME"},
		"server": map[string]any{"name": srv, "version": version, "registryName": regName,
			"artifacts": []any{map[string]any{"type": "npm", "name": pkg, "version": version, "digest": "sha512-" + base64.StdEncoding.EncodeToString(integrity)}}},
		"tools": []any{map[string]any{"version": "1.0.0", "permissions": []any{map[string]any{"scope": "weather:read", "description": "Reads forecasts"}},
			"definition": map[string]any{"name": "get_weather", "description": "Get the weather for a city.",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}},
	})
	if err != nil {
		p.t.Fatal(err)
	}
	m, err := etdi.ParseManifest(doc)
	if err != nil {
		p.t.Fatal(err)
	}
	s, err := keys.Signer(p.signer)
	if err != nil {
		p.t.Fatal(err)
	}
	b, err := sign.Sign(m, s, p.signer.Public(), sign.Options{})
	if err != nil {
		p.t.Fatal(err)
	}
	return b.Marshal()
}

// publish publishes name@version with npm package pkg@pkgVersion to reg;
// with a bundle, its server.json names the file at path on the provider's
// host and the bundle's digest.
func (p *provider) publish(reg interface {
	Publish(context.Context, []byte) error
}, name, version, pkg, pkgVersion, path string, bundle []byte) {
	p.t.Helper()
	doc, err := json.Marshal(map[string]any{
		"$schema": schemaURL, "name": name, "description": "Weather forecasts", "version": version,
		"packages": []any{map[string]any{"registryType": "npm", "identifier": pkg, "version": pkgVersion, "transport": map[string]any{"type": "stdio"}}},
	})
	if err != nil {
		p.t.Fatal(err)
	}
	if bundle != nil {
		if doc, err = registry.SetEtdiMeta(doc, registry.EtdiMeta{Bundle: p.files.url(path), Digest: registry.Digest(bundle)}); err != nil {
			p.t.Fatal(err)
		}
		if _, ok := p.files.get(path); !ok {
			p.files.put(path, bundle)
		}
	}
	if err := reg.Publish(context.Background(), doc); err != nil {
		p.t.Fatalf("publishing %s@%s: %v", name, version, err)
	}
}

// approve approves every tool of bundle in the pin database db, as etdi
// pin approve does; it returns the server's pin identity.
func (p *provider) approve(db string, bundle []byte) string {
	p.t.Helper()
	r, err := guard.Observe(context.Background(), nil, guard.Options{Policy: p.policy, Bundle: bundle})
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

func revoke(t testing.TB, db, server, tool string) {
	t.Helper()
	s, err := pin.Open(db, pin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Revoke(pin.Revocation{Server: server, Tool: tool, By: "test", Reason: "compromised"}); err != nil {
		t.Fatal(err)
	}
}

// files serves files on 127.0.0.1; what it serves can be replaced.
type files struct {
	mu    sync.Mutex
	files map[string][]byte
	base  string
}

func newFiles(t testing.TB) *files {
	f := &files{files: map[string][]byte{}}
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

func (f *files) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, ok := f.get(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Write(b)
}

func (f *files) get(path string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.files[path]
	return b, ok
}

func (f *files) put(path string, b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[path] = b
}

func (f *files) url(path string) string { return f.base + path }

// TestAttackSignedEntries: judged by an audit against the trust policy
// and a real pin store, the mirror serves the genuine signed and approved
// entry and none of: the same bundle attached to another namespace's
// entry, an entry whose npm version differs from the bundle's binding, an
// unsigned entry (although the policy lets unsigned servers run), a
// signed entry whose tools are not approved, a bundle URL serving other
// bytes than the entry names. Revoking the genuine entry's tool in the
// pin store removes it from the next answer of every endpoint.
func TestAttackSignedEntries(t *testing.T) {
	p := newProvider(t)
	p.policy.Unsigned = trust.Allow
	db := filepath.Join(t.TempDir(), "pins.db")
	reg := registryShared(t)

	genuine := p.name("acme", "weather")
	gb := p.bundle("weather", genuine, "@acme/weather", "1.0.0")
	p.publish(reg, genuine, "1.0.0", "@acme/weather", "1.0.0", "/weather.etdi.json", gb)
	server := p.approve(db, gb)

	// The genuine bundle, attached to another owner's entry of the same
	// package.
	stolen := p.name("evil", "weather")
	p.publish(reg, stolen, "1.0.0", "@acme/weather", "1.0.0", "/weather.etdi.json", gb)

	// A bundle for npm 1.0.0 on an entry of npm 1.0.1.
	drift := p.name("acme", "drift")
	db2 := p.bundle("drift", drift, "@acme/drift", "1.0.0")
	p.approve(db, db2)
	p.publish(reg, drift, "1.0.0", "@acme/drift", "1.0.1", "/drift.etdi.json", db2)

	plain := p.name("acme", "plain")
	p.publish(reg, plain, "1.0.0", "@acme/plain", "1.0.0", "", nil)

	fresh := p.name("acme", "fresh")
	p.publish(reg, fresh, "1.0.0", "@acme/fresh", "1.0.0", "/fresh.etdi.json", p.bundle("fresh", fresh, "@acme/fresh", "1.0.0"))

	// The entry names one approved bundle; its URL serves another.
	swapped := p.name("acme", "swapped")
	sb := p.bundle("swapped", swapped, "@acme/swapped", "1.0.0")
	p.approve(db, sb)
	p.publish(reg, swapped, "1.0.0", "@acme/swapped", "1.0.0", "/swapped.etdi.json", sb)
	other := p.bundle("swapped", swapped, "@acme/swapped", "1.0.0-evil")
	p.approve(db, other)
	p.files.put("/swapped.etdi.json", other)

	a, err := audit.New(audit.Options{Trust: p.policy, Pins: db})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	f := serve(t, mirror.Approved(a))

	q := url.Values{"search": {p.suffix}}
	page := f.list(t, q)
	if got := ids(page); !slices.Equal(got, []string{genuine + "@1.0.0"}) {
		t.Fatalf("listing: %v, want only %s@1.0.0", got, genuine)
	}
	var v mirror.Verdict
	if err := json.Unmarshal(page.Servers[0].Meta[mirror.VerdictKey], &v); err != nil || v.Provider != "acme" || v.Server != server || v.Bundle != registry.Digest(gb) {
		t.Fatalf("verdict %s (%v)", page.Servers[0].Meta[mirror.VerdictKey], err)
	}
	for _, n := range []string{stolen, drift, plain, fresh, swapped} {
		if s := f.entry(t, n, "1.0.0"); s != 404 {
			t.Errorf("%s@1.0.0: %d, want 404", n, s)
		}
		if s, _ := f.versions(t, n); s != 404 {
			t.Errorf("versions of %s: %d, want 404", n, s)
		}
	}
	if s := f.entry(t, genuine, "latest"); s != 200 {
		t.Fatalf("the genuine entry: %d", s)
	}

	revoke(t, db, server, "get_weather")
	if got := ids(f.list(t, q)); len(got) != 0 {
		t.Fatalf("after the revocation: %v", got)
	}
	if s := f.entry(t, genuine, "1.0.0"); s != 404 {
		t.Fatalf("the revoked entry: %d", s)
	}
	if s, _ := f.versions(t, genuine); s != 404 {
		t.Fatalf("the revoked entry's versions: %d", s)
	}
}
