package registry

import (
	"testing"

	"github.com/etdi-dev/etdi"
)

// FuzzParseServerJSON: a server.json or a registry answer never panics the
// reader, and a document it accepts keeps an acceptable name and takes
// dev.etdi metadata within bounds.
func FuzzParseServerJSON(f *testing.F) {
	f.Add([]byte(weatherJSON))
	f.Add([]byte(`{"name":"io.github.acme/weather","version":"1","_meta":{"io.modelcontextprotocol.registry/publisher-provided":{"dev.etdi":{"bundle":"https://a.example/b","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}}}}`))
	f.Add([]byte(`{"servers":[{"server":{"name":"a.b/c","version":"1"}}],"metadata":{"nextCursor":"x"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if s, err := ParseServerJSON(data); err == nil {
			if etdi.RegistryNamespace(s.Name) == "" {
				t.Fatalf("accepted name %q without a namespace", s.Name)
			}
			s.EtdiMeta()
			m := EtdiMeta{Bundle: "https://a.example/b", Digest: "sha256:0000000000000000000000000000000000000000000000000000000000000000"}
			if out, err := SetEtdiMeta(data, m); err == nil {
				s2, err := ParseServerJSON(out)
				if err != nil {
					t.Fatalf("SetEtdiMeta wrote a document it cannot read: %v", err)
				}
				if got, ok, err := s2.EtdiMeta(); !ok || err != nil || got != m {
					t.Fatalf("read back %+v %v %v", got, ok, err)
				}
				if s2.Name != s.Name || s2.Version != s.Version || len(s2.Packages) != len(s.Packages) {
					t.Fatal("SetEtdiMeta changed the server")
				}
			}
		}
		parsePage(data, MaxPageSize)
		parseEntry(data)
	})
}
