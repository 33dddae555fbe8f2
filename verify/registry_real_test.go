package verify_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/registrytest"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
)

// TestAttackBundleOnAnotherNamespacesEntry runs against the official MCP
// Registry: acme publishes io.github.acme/NAME with its signed bundle in
// the entry's dev.etdi metadata; an attacker publishes io.github.evil/NAME
// pointing at the same genuine bundle (its digest matches: it is the same
// file). Read from the registry as a client reads it, acme's entry
// verifies and the attacker's is impersonation, both by the name the
// bundle was made for and by the namespaces acme's trust entry lists.
func TestAttackBundleOnAnotherNamespacesEntry(t *testing.T) {
	reg := registrytest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	suffix := make([]byte, 4)
	rand.Read(suffix)
	server := "weather-" + hex.EncodeToString(suffix)
	genuine := "io.github.acme/" + server

	signer, pub := newKey(t)
	m := weatherManifest(t)
	m.Server.RegistryName = genuine
	b, err := sign.Sign(m, signer, pub, sign.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bundle := b.Marshal()
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(bundle) }))
	defer files.Close()
	meta := registry.EtdiMeta{Bundle: files.URL + "/weather.etdi.json", Digest: registry.Digest(bundle)}

	for _, name := range []string{genuine, "io.github.evil/" + server} {
		doc := fmt.Appendf(nil, `{
  "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
  "name": %q,
  "description": "Weather forecasts",
  "version": "1.2.0",
  "packages": [{"registryType": "npm", "identifier": "@acme/weather", "version": "1.2.0", "transport": {"type": "stdio"}}]
}`, name)
		if doc, err = registry.SetEtdiMeta(doc, meta); err != nil {
			t.Fatal(err)
		}
		if err := reg.Publish(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}

	p := trust.New()
	if _, err := p.AddKey("acme", trust.Key{PublicKey: pub}); err != nil {
		t.Fatal(err)
	}
	withNamespaces := trust.New()
	if _, err := withNamespaces.AddKey("acme", trust.Key{PublicKey: pub}); err != nil {
		t.Fatal(err)
	}
	if _, err := withNamespaces.AddRegistryNamespaces("acme", "io.github.acme"); err != nil {
		t.Fatal(err)
	}
	c, err := registry.NewClient(reg.URL)
	if err != nil {
		t.Fatal(err)
	}
	// check fetches an entry and its bundle as a client does, and
	// verifies the bundle for the entry's name.
	check := func(name string, p *trust.Policy) *verify.Result {
		t.Helper()
		e, err := c.Get(ctx, name, "1.2.0")
		if err != nil {
			t.Fatal(err)
		}
		em, ok, err := e.Server.EtdiMeta()
		if err != nil || !ok {
			t.Fatalf("%s: dev.etdi %+v %v %v", name, em, ok, err)
		}
		data, err := registry.FetchBundle(ctx, files.Client(), em)
		if err != nil {
			t.Fatal(err)
		}
		return verify.Verify(data, p, verify.Options{RegistryName: e.Server.Name})
	}
	for _, pol := range []*trust.Policy{p, withNamespaces} {
		if r := check(genuine, pol); !r.OK() {
			t.Fatalf("the genuine entry: %+v", r.Findings)
		}
		impersonation(t, check("io.github.evil/"+server, pol), `checked for registry entry "io.github.evil/`+server+`"`)
	}

	// A bundle that does not name its entry is caught by the namespaces
	// alone: only a provider that lists them is protected.
	m.Server.RegistryName = ""
	unnamed, err := sign.Sign(m, signer, pub, sign.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bundle = unnamed.Marshal()
	evil := "io.github.evil/" + server + "-unnamed"
	meta.Digest = registry.Digest(bundle)
	doc := fmt.Appendf(nil, `{"$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json", "name": %q, "description": "Weather forecasts", "version": "1.2.0"}`, evil)
	if doc, err = registry.SetEtdiMeta(doc, meta); err != nil {
		t.Fatal(err)
	}
	if err := reg.Publish(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if r := check(evil, p); !r.OK() {
		t.Fatalf("a provider without namespaces: %+v", r.Findings)
	}
	r := check(evil, withNamespaces)
	impersonation(t, r, `provider "acme" publishes only under io.github.acme`)
	if r.ExitCode() != finding.ExitImpersonation {
		t.Fatal(r.ExitCode())
	}
}
