package verify_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
)

// FuzzVerify mutates signed bundles. Whatever the mutation, a bundle is
// accepted only if its payload is byte for byte one that the trusted key
// really signed (the payloads of the seed bundles that verify).
func FuzzVerify(f *testing.F) {
	dir := filepath.Join(vectorDir, "valid_ed25519")
	pb, err := os.ReadFile(filepath.Join(dir, "trust.json"))
	if err != nil {
		f.Fatal(err)
	}
	p, err := trust.Parse(pb)
	if err != nil {
		f.Fatal(err)
	}
	signed := map[string]bool{}
	paths, _ := filepath.Glob(filepath.Join(vectorDir, "*", "bundle.etdi.json"))
	paths = append(paths, filepath.Join(dir, "bundle.etdi.json"))
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		if r := verify.Verify(b, p, verify.Options{Now: vectorsAt}); r.Verified {
			pb, _ := etdi.ParseBundle(b)
			signed[string(pb.Envelope.Payload)] = true
		}
	}
	if len(signed) < 2 {
		f.Fatalf("only %d signed payloads among the seeds", len(signed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := verify.Verify(data, p, verify.Options{Now: vectorsAt})
		if !r.Verified {
			if r.OK() {
				t.Fatal("unverified result reports OK")
			}
			return
		}
		b, err := etdi.ParseBundle(data)
		if err != nil {
			t.Fatalf("verified a bundle that does not parse: %v", err)
		}
		if !signed[string(b.Envelope.Payload)] {
			t.Fatalf("verified a payload that was never signed:\n%s", b.Envelope.Payload)
		}
	})
}
