package mirror_test

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"slices"
	"testing"

	"github.com/etdi-dev/etdi/internal/registrytest"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/registry/audit"
	"github.com/etdi-dev/etdi/registry/mirror"
	"github.com/etdi-dev/etdi/trust"
)

// provider is provider acme of the registry fixture, which signs bundles
// and hosts them on 127.0.0.1 as a release page would, and here also
// publishes server.json documents naming them.
type provider struct {
	*registrytest.Provider
	t testing.TB
}

func newProvider(t testing.TB) *provider {
	t.Helper()
	return &provider{Provider: registrytest.NewProvider(t), t: t}
}

// publish publishes name@version with npm package pkg@pkgVersion to reg;
// with a bundle, its server.json names the file at path on the provider's
// host (put there unless a file is already) and the bundle's digest.
func (p *provider) publish(reg interface {
	Publish(context.Context, []byte) error
}, name, version, pkg, pkgVersion, path string, bundle []byte) {
	p.t.Helper()
	doc := p.ServerJSON(name, version, pkg, pkgVersion, path, bundle)
	if bundle != nil {
		if _, ok := p.Files.Get(path); !ok {
			p.Files.Put(path, bundle)
		}
	}
	if err := reg.Publish(context.Background(), doc); err != nil {
		p.t.Fatalf("publishing %s@%s: %v", name, version, err)
	}
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
	p.Policy.Unsigned = trust.Allow
	db := filepath.Join(t.TempDir(), "pins.db")
	reg := registryShared(t)

	genuine := p.Name("acme", "weather")
	gb := p.NPMBundle(genuine, "@acme/weather", "1.0.0")
	p.publish(reg, genuine, "1.0.0", "@acme/weather", "1.0.0", "/weather.etdi.json", gb)
	server := p.Approve(db, gb)

	// The genuine bundle, attached to another owner's entry of the same
	// package.
	stolen := p.Name("evil", "weather")
	p.publish(reg, stolen, "1.0.0", "@acme/weather", "1.0.0", "/weather.etdi.json", gb)

	// A bundle for npm 1.0.0 on an entry of npm 1.0.1.
	drift := p.Name("acme", "drift")
	db2 := p.NPMBundle(drift, "@acme/drift", "1.0.0")
	p.Approve(db, db2)
	p.publish(reg, drift, "1.0.0", "@acme/drift", "1.0.1", "/drift.etdi.json", db2)

	plain := p.Name("acme", "plain")
	p.publish(reg, plain, "1.0.0", "@acme/plain", "1.0.0", "", nil)

	fresh := p.Name("acme", "fresh")
	p.publish(reg, fresh, "1.0.0", "@acme/fresh", "1.0.0", "/fresh.etdi.json", p.NPMBundle(fresh, "@acme/fresh", "1.0.0"))

	// The entry names one approved bundle; its URL serves another.
	swapped := p.Name("acme", "swapped")
	sb := p.NPMBundle(swapped, "@acme/swapped", "1.0.0")
	p.Approve(db, sb)
	p.publish(reg, swapped, "1.0.0", "@acme/swapped", "1.0.0", "/swapped.etdi.json", sb)
	other := p.NPMBundle(swapped, "@acme/swapped", "1.0.0-evil")
	p.Approve(db, other)
	p.Files.Put("/swapped.etdi.json", other)

	a, err := audit.New(audit.Options{Trust: p.Policy, Pins: db})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	f := serve(t, mirror.Approved(a))

	q := url.Values{"search": {p.Suffix}}
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
