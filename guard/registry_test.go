package guard

import (
	"context"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
)

// The registry name a server was found under reaches verification: a
// bundle checked for an entry outside its provider's namespaces
// establishes nothing (impersonation); for one inside, it does.
func TestObserveRegistryName(t *testing.T) {
	bundle, p := trustedBundle(t, func(*etdi.Manifest) {})
	if _, err := p.AddRegistryNamespaces("acme", "io.github.acme"); err != nil {
		t.Fatal(err)
	}
	opts := Options{Policy: p, Bundle: bundle, RegistryName: "io.github.evil/weather"}
	r, err := Observe(context.Background(), nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Blocked() || r.ExitCode() != finding.ExitImpersonation {
		t.Fatalf("checked for io.github.evil/weather: exit %d, findings %+v", r.ExitCode(), r.Findings)
	}
	opts.RegistryName = "io.github.acme/weather"
	if r, err = Observe(context.Background(), nil, opts); err != nil || r.Blocked() || r.ExitCode() != finding.ExitOK {
		t.Fatalf("checked for io.github.acme/weather: %v %+v", err, r)
	}
}
