package guard

import (
	"context"
	"os"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/trust"
)

// The registry name a server was found under reaches verification: a
// bundle checked for an entry outside its provider's namespaces
// establishes nothing (impersonation); for one inside, it does.
func TestObserveRegistryName(t *testing.T) {
	priv, err := keys.Generate(keys.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := keys.Signer(priv)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../cmd/etdi/demodata/weather.manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := etdi.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sign.Sign(m, signer, priv.Public(), sign.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := trust.New()
	if _, err := p.AddKey("acme", trust.Key{PublicKey: priv.Public()}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddRegistryNamespaces("acme", "io.github.acme"); err != nil {
		t.Fatal(err)
	}
	opts := Options{Policy: p, Bundle: b.Marshal(), RegistryName: "io.github.evil/weather"}
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
