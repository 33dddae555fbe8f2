package keyless_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/etdi-dev/etdi/keyless"
)

// FuzzParse feeds hostile bytes to the Sigstore bundle reader: it must not
// panic, and what it accepts is a v0.3 bundle with one signature over an
// in-toto payload.
func FuzzParse(f *testing.F) {
	seed, err := os.ReadFile("testdata/bundle.sigstore.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(bytes.Replace(seed, []byte(`"mediaType"`), []byte(`"mediaType":"x","mediaType"`), 1))
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := keyless.Parse(data)
		if err != nil {
			return
		}
		if !keyless.IsBundle(data) {
			t.Fatal("parsed a bundle IsBundle does not recognize")
		}
		if len(b.Envelope.Signatures) != 1 || b.Envelope.PayloadType != "application/vnd.in-toto+json" {
			t.Fatalf("accepted %+v", b.Envelope)
		}
	})
}
