package sign_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/sign"
)

// weatherManifest is what provider acme writes for its weather server.
const weatherManifest = `{
  "provider": {"id": "acme", "name": "ACME Weather Inc."},
  "server": {"name": "weather", "version": "1.2.0"},
  "tools": [{
    "version": "1.0.0",
    "permissions": [{"scope": "net:fetch", "description": "Calls the ACME weather API"}],
    "definition": {
      "name": "get_weather",
      "description": "Get the current weather for a city.",
      "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    }
  }]
}`

// A provider signs its manifest with its key and publishes the bundle
// next to its server, e.g. as weather.etdi.json. The key here is the
// repository's fixed test key, an encrypted key file as "etdi key
// generate" writes it; its password is public.
func ExampleSign() {
	m, err := etdi.ParseManifest([]byte(weatherManifest))
	if err != nil {
		log.Fatal(err)
	}
	signer, pub, err := keys.LoadSigner(context.Background(), "../testdata/keys/acme-ed25519.key",
		func() ([]byte, error) { return []byte("etdi-test-vectors-only"), nil })
	if err != nil {
		log.Fatal(err)
	}
	bundle, err := sign.Sign(m, signer, pub, sign.Options{
		IssuedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Expires:  time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),
		Sequence: 1,
	})
	if err != nil {
		log.Fatal(err)
	}
	// bundle.Marshal() is the file to publish.
	id, _ := keys.ID(pub)
	fmt.Println(len(bundle.Envelope.Signatures), "signature by key", keys.ShortID(id))
	st, err := etdi.ParseStatement(bundle.Envelope.Payload)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("valid until", st.Expires.Format(time.DateOnly), "sequence", st.Sequence)
	for _, t := range st.Tools {
		fmt.Println(etdi.SubjectName(t.Name, t.Version), t.Digest.Short())
	}
	// Output:
	// 1 signature by key sha256:b414df262aa29158
	// valid until 2027-01-01 sequence 1
	// get_weather@1.0.0 0e1f9f5d833a
}

// A provider signs a release with its key file, refusing one that the
// clients of the previous release would take for a rug pull (here the
// previous release is the same manifest with a lower sequence, so the
// release is accepted and every tool is unchanged).
func ExampleBundle() {
	m, err := etdi.ParseManifest([]byte(weatherManifest))
	if err != nil {
		log.Fatal(err)
	}
	prev, _, err := sign.Build(m, sign.Options{IssuedAt: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC), Sequence: 1})
	if err != nil {
		log.Fatal(err)
	}
	key := &sign.Key{Ref: "../testdata/keys/acme-ed25519.key",
		Password: func() ([]byte, error) { return []byte("etdi-test-vectors-only"), nil }}
	r, err := sign.Bundle(context.Background(), m, key, sign.BundleOptions{
		Options:  sign.Options{IssuedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		Previous: prev,
	})
	if err != nil {
		log.Fatal(err)
	}
	// r.Bundle is the file to publish.
	fmt.Println("signed by", r.By(), "sequence", r.Statement.Sequence)
	for _, t := range r.Release.Tools {
		fmt.Println(t.Name, t.Status)
	}
	// Output:
	// signed by key sha256:b414df262aa29158 sequence 1767225600
	// get_weather unchanged
}
