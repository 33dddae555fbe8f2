package audit_test

import (
	"context"
	"testing"

	"github.com/etdi-dev/etdi/internal/registrytest"
	"github.com/etdi-dev/etdi/registry"
)

// world is what the tests publish to: the real registry (shared by the
// tests of the package, each with a provider whose names are its own),
// and provider acme publishing to it (registrytest.Provider), whose key
// the trust policy trusts.
type world struct {
	*registrytest.Provider
	t      testing.TB
	reg    *registrytest.Registry
	client *registry.Client
}

func newWorld(t testing.TB) *world {
	t.Helper()
	reg := registrytest.Shared(t)
	c, err := registry.NewClient(reg.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &world{Provider: registrytest.NewProvider(t), t: t, reg: reg, client: c}
}

func (w *world) publish(doc []byte) {
	w.t.Helper()
	if err := w.reg.Publish(context.Background(), doc); err != nil {
		w.t.Fatalf("publishing: %v\n%s", err, doc)
	}
}

// entry returns the registry's entry of name@version.
func (w *world) entry(name, version string) registry.Entry {
	w.t.Helper()
	e, err := w.client.Get(context.Background(), name, version)
	if err != nil {
		w.t.Fatal(err)
	}
	return *e
}
