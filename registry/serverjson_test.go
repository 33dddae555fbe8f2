package registry

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
)

const weatherJSON = `{
  "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
  "name": "io.github.acme/weather",
  "description": "Weather forecasts",
  "version": "1.2.0",
  "x-later-member": {"kept": true},
  "packages": [
    {"registryType": "npm", "identifier": "@acme/weather-mcp", "version": "1.2.0", "transport": {"type": "stdio"}}
  ],
  "remotes": [
    {"type": "streamable-http", "url": "https://mcp.acme.example/weather"}
  ]
}
`

func TestParseServerJSON(t *testing.T) {
	s, err := ParseServerJSON([]byte(weatherJSON))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "io.github.acme/weather" || s.Version != "1.2.0" || len(s.Packages) != 1 || s.Packages[0].Identifier != "@acme/weather-mcp" || len(s.Remotes) != 1 {
		t.Fatalf("parsed %+v", s)
	}
	if etdi.RegistryNamespace(s.Name) != "io.github.acme" {
		t.Errorf("namespace %q", etdi.RegistryNamespace(s.Name))
	}
	if _, ok, err := s.EtdiMeta(); ok || err != nil {
		t.Errorf("a server.json without dev.etdi: ok %v, err %v", ok, err)
	}
}

func TestParseServerJSONRefuses(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"duplicate name", `{"name":"io.github.acme/weather","name":"io.github.evil/weather","version":"1"}`, "duplicate"},
		{"no namespace", `{"name":"weather","version":"1"}`, "NAMESPACE/NAME"},
		{"two slashes", `{"name":"io.github.acme/a/b","version":"1"}`, "NAMESPACE/NAME"},
		{"underscore in namespace", `{"name":"io_github.acme/weather","version":"1"}`, "not allowed"},
		{"no version", `{"name":"io.github.acme/weather"}`, "version"},
		{"bad fileSha256", `{"name":"io.github.acme/weather","version":"1","packages":[{"registryType":"mcpb","identifier":"https://x/y.mcpb","fileSha256":"ABC","transport":{"type":"stdio"}}]}`, "fileSha256"},
		{"remote without url", `{"name":"io.github.acme/weather","version":"1","remotes":[{"type":"sse"}]}`, "url"},
		{"not an object", `[1]`, "want an object"},
		{"meta not an object", `{"name":"io.github.acme/weather","version":"1","_meta":"x"}`, "server.json"},
		{"too large", `{"name":"io.github.acme/weather","version":"1","description":"` + strings.Repeat("x", MaxServerJSONSize) + `"}`, "larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseServerJSON([]byte(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestSetEtdiMetaKeepsTheDocument(t *testing.T) {
	m := EtdiMeta{Bundle: "https://github.com/acme/weather/releases/download/v1.2.0/weather.etdi.json", Digest: "sha256:" + strings.Repeat("ab", 32)}
	out, err := SetEtdiMeta([]byte(weatherJSON), m)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseServerJSON(out)
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.EtdiMeta()
	if err != nil || !ok || got != m {
		t.Fatalf("read back %+v, %v, %v", got, ok, err)
	}
	// Every member is kept, in its place; _meta comes last.
	order := []string{`"$schema"`, `"name"`, `"description"`, `"version"`, `"x-later-member"`, `"kept"`, `"packages"`, `"remotes"`, `"_meta"`, `"dev.etdi"`}
	last := -1
	for _, k := range order {
		i := bytes.Index(out, []byte(k))
		if i <= last {
			t.Fatalf("%s missing or out of order in\n%s", k, out)
		}
		last = i
	}
	// Setting it again replaces it: one dev.etdi member, the new values.
	m2 := EtdiMeta{Bundle: "https://example.org/b.json", Digest: "sha256:" + strings.Repeat("cd", 32)}
	out2, err := SetEtdiMeta(out, m2)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(out2, []byte(`"dev.etdi"`)) != 1 || bytes.Contains(out2, []byte(m.Bundle)) {
		t.Fatalf("not replaced:\n%s", out2)
	}
}

func TestSetEtdiMetaKeepsOtherPublisherMetadata(t *testing.T) {
	doc := `{"name":"io.github.acme/weather","version":"1","_meta":{"io.modelcontextprotocol.registry/publisher-provided":{"com.acme/build":{"id":7}}}}`
	out, err := SetEtdiMeta([]byte(doc), EtdiMeta{Bundle: "https://a.example/b", Digest: "sha256:" + strings.Repeat("0", 64)})
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Meta map[string]map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	pp := v.Meta[PublisherProvidedKey]
	if string(pp["com.acme/build"]) != `{"id":7}` && !strings.Contains(string(pp["com.acme/build"]), `"id": 7`) {
		t.Fatalf("other metadata lost: %s", out)
	}
	if _, ok := pp[EtdiKey]; !ok {
		t.Fatalf("dev.etdi not written: %s", out)
	}
}

func TestSetEtdiMetaRefuses(t *testing.T) {
	big := `{"name":"io.github.acme/weather","version":"1","_meta":{"io.modelcontextprotocol.registry/publisher-provided":{"com.acme/notes":"` + strings.Repeat("n", 4000) + `"}}}`
	good := EtdiMeta{Bundle: "https://a.example/b", Digest: "sha256:" + strings.Repeat("0", 64)}
	if _, err := SetEtdiMeta([]byte(big), good); err == nil || !strings.Contains(err.Error(), "4096") {
		t.Errorf("over the registry's 4 KB: %v", err)
	}
	for _, m := range []EtdiMeta{
		{Bundle: "http://bundles.example/b", Digest: good.Digest}, // plain http to another host
		{Bundle: "https://u:p@a.example/b", Digest: good.Digest},  // credentials in the URL
		{Bundle: "file:///etc/passwd", Digest: good.Digest},       // not a web URL
		{Bundle: good.Bundle, Digest: "sha512:" + strings.Repeat("0", 128)},
		{Bundle: good.Bundle, Digest: "sha256:" + strings.Repeat("A", 64)},
	} {
		if _, err := SetEtdiMeta([]byte(weatherJSON), m); err == nil {
			t.Errorf("%+v accepted", m)
		}
	}
	if _, err := SetEtdiMeta([]byte(weatherJSON), EtdiMeta{Bundle: "http://127.0.0.1:8080/b", Digest: good.Digest}); err != nil {
		t.Errorf("http to a loopback host refused: %v", err)
	}
}

func TestEtdiMetaMalformedIsAnErrorNotUnsigned(t *testing.T) {
	for _, meta := range []string{
		`{"dev.etdi":{"bundle":"https://a.example/b"}}`,
		`{"dev.etdi":{"bundle":"https://a.example/b","digest":"sha256:` + strings.Repeat("0", 64) + `","extra":1}}`,
		`{"dev.etdi":"https://a.example/b"}`,
	} {
		doc := `{"name":"io.github.acme/weather","version":"1","_meta":{"` + PublisherProvidedKey + `":` + meta + `}}`
		s, err := ParseServerJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.EtdiMeta(); err == nil || ok {
			t.Errorf("%s: ok %v, err %v", meta, ok, err)
		}
	}
}

func TestBinding(t *testing.T) {
	s, err := ParseServerJSON([]byte(weatherJSON))
	if err != nil {
		t.Fatal(err)
	}
	genuine := etdi.Server{
		Name:         "weather",
		RegistryName: "io.github.acme/weather",
		Endpoints:    []string{"https://mcp.acme.example/weather"},
		Artifacts:    []etdi.Artifact{{Type: "npm", Name: "@acme/weather-mcp", Version: "1.2.0", Digest: "sha512-AAAA"}},
	}
	if m := Binding(s, genuine); len(m) != 0 {
		t.Fatalf("genuine bundle: %v", m)
	}
	for _, c := range []struct {
		name string
		edit func(*etdi.Server)
		want string
	}{
		{"another entry's name", func(v *etdi.Server) { v.RegistryName = "io.github.evil/weather" }, "the bundle is for io.github.evil/weather"},
		{"another npm version", func(v *etdi.Server) { v.Artifacts[0].Version = "1.1.0" }, "npm @acme/weather-mcp@1.2.0"},
		{"another npm package", func(v *etdi.Server) { v.Artifacts[0].Name = "@acme/weather" }, "npm @acme/weather-mcp@1.2.0"},
		{"no artifacts", func(v *etdi.Server) { v.Artifacts = nil }, "names no npm artifact"},
		{"another endpoint", func(v *etdi.Server) { v.Endpoints = []string{"https://mcp.acme.example/weatherx"} }, "not covered"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := genuine
			v.Artifacts = append([]etdi.Artifact(nil), genuine.Artifacts...)
			c.edit(&v)
			ms := Binding(s, v)
			if len(ms) == 0 {
				t.Fatal("bound")
			}
			var all []string
			for _, m := range ms {
				all = append(all, m.Error())
			}
			if !strings.Contains(strings.Join(all, "; "), c.want) {
				t.Fatalf("mismatches %q, want %q", all, c.want)
			}
		})
	}
}

func TestBindsOtherPackages(t *testing.T) {
	hash := strings.Repeat("1f", 32)
	signed := etdi.Server{Name: "w", Artifacts: []etdi.Artifact{
		{Type: "mcpb", Name: "weather", Version: "1.2.0", Digest: "sha256:" + hash},
		{Type: "oci", Name: "ghcr.io/acme/weather", Version: "1.2.0", Digest: "sha256:" + strings.Repeat("2e", 32)},
		{Type: "pypi", Name: "acme_weather", Version: "1.2.0", Digest: "sha256:" + strings.Repeat("3d", 32)},
	}}
	ok := []Package{
		{RegistryType: "mcpb", Identifier: "https://github.com/acme/weather/releases/download/v1.2.0/weather.mcpb", FileSHA256: hash},
		{RegistryType: "oci", Identifier: "ghcr.io/acme/weather:1.2.0"},
		{RegistryType: "oci", Identifier: "ghcr.io/acme/weather@sha256:" + strings.Repeat("2e", 32)},
		{RegistryType: "pypi", Identifier: "Acme-Weather", Version: "1.2.0"},
	}
	for _, p := range ok {
		if m := BindsPackage(p, signed); m != nil {
			t.Errorf("%s: %v", PackageLabel(p), m)
		}
	}
	bad := []Package{
		{RegistryType: "mcpb", Identifier: "https://x/weather.mcpb", FileSHA256: strings.Repeat("00", 32)},
		{RegistryType: "mcpb", Identifier: "https://x/weather.mcpb"},
		{RegistryType: "oci", Identifier: "ghcr.io/acme/weather:1.3.0"},
		{RegistryType: "oci", Identifier: "ghcr.io/acme/weather"},
		{RegistryType: "oci", Identifier: "ghcr.io/evil/weather:1.2.0"},
		{RegistryType: "pypi", Identifier: "acme-weather", Version: "1.2.1"},
		{RegistryType: "pypi", Identifier: "acme-weather"},
		{RegistryType: "nuget", Identifier: "Acme.Weather", Version: "1.2.0"},
	}
	for _, p := range bad {
		if m := BindsPackage(p, signed); m == nil {
			t.Errorf("%s bound", PackageLabel(p))
		}
	}
}

// A document that reads one way to etdi (Go's decoder matches names
// without regard to case) and another to a host (JSON.parse does not) is
// refused: what etdi judges is what the host reads.
func TestParseServerJSONRefusesCaseVariants(t *testing.T) {
	good := `{"registryType":"npm","identifier":"good-pkg","version":"1.0.0","transport":{"type":"stdio"}}`
	evil := `{"registryType":"npm","identifier":"evil-pkg","version":"6.6.6","transport":{"type":"stdio"}}`
	for _, doc := range []string{
		`{"name":"io.github.acme/w","version":"1","packages":[` + evil + `],"Packages":[` + good + `]}`,
		`{"name":"io.github.acme/w","version":"1","Packages":[` + good + `]}`,
		`{"name":"io.github.acme/w","version":"1","packages":[{"registryType":"npm","Identifier":"good-pkg","identifier":"evil-pkg","version":"1","transport":{"type":"stdio"}}]}`,
		// Inside _meta, the names etdi reads: the registry's keys, dev.etdi
		// and its members. Another spelling would be read by one reader
		// and not another, and dev.etdi written beside it would make two.
		`{"name":"io.github.acme/w","version":"1","_meta":{"io.modelConteXtprotocol.registry/Publisher-provided":{"dev.etdi":{}}}}`,
		`{"name":"io.github.acme/w","version":"1","_meta":{"io.modelcontextprotocol.registry/publisher-provided":{"Dev.Etdi":{}}}}`,
		`{"name":"io.github.acme/w","version":"1","_meta":{"io.modelcontextprotocol.registry/publisher-provided":{"dev.etdi":{"Bundle":"https://evil.example/b"}}}}`,
		`{"name":"io.github.acme/w","version":"1","_meta":{"io.modelcontextprotocol.registry/Official":{"status":"active"}}}`,
	} {
		if _, err := ParseServerJSON([]byte(doc)); err == nil || !strings.Contains(err.Error(), "only in case") {
			t.Errorf("%s: %v", doc, err)
		}
		if _, err := parseEntry([]byte(`{"server":` + doc + `}`)); err == nil {
			t.Errorf("an entry of %s read", doc)
		}
	}
	// A publisher's own metadata may use any names.
	meta := `{"name":"io.github.acme/w","version":"1","_meta":{"io.modelcontextprotocol.registry/publisher-provided":{"Version":"2.1.0","Name":"ci"}}}`
	if _, err := ParseServerJSON([]byte(meta)); err != nil {
		t.Errorf("publisher metadata: %v", err)
	}
}
