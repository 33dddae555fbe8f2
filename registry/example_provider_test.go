package registry_test

import (
	"fmt"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/registry"
)

// A provider's release tool takes the manifest's server section from
// server.json, compares a manifest with it, and after signing records the
// bundle in it. The resolver here stands in for
// [registry.ResolvePackage], which resolves what a host's npx launch of
// the package runs.
func ExampleManifestServer() {
	doc := []byte(`{
  "name": "io.github.acme/weather",
  "version": "1.2.0",
  "packages": [{"registryType": "npm", "identifier": "@acme/weather-mcp", "version": "1.2.0", "transport": {"type": "stdio"}}],
  "remotes": [{"type": "streamable-http", "url": "https://mcp.acme.example/weather"}]
}`)
	s, err := registry.ParseServerJSON(doc)
	if err != nil {
		panic(err)
	}
	resolve := func(p registry.Package) (etdi.Artifact, error) {
		return etdi.Artifact{Type: etdi.ArtifactNPM, Name: p.Identifier, Version: p.Version, Digest: "sha512-AAAA"}, nil
	}
	server, problems, err := registry.ManifestServer(s, resolve)
	if err != nil || len(problems) > 0 {
		panic(fmt.Sprint(err, problems))
	}
	fmt.Println(server.RegistryName, server.Name, server.Version, server.Endpoints, server.Artifacts[0].String())

	// A manifest made for another version of the package disagrees.
	server.Artifacts[0].Version = "1.1.0"
	for _, m := range registry.Compare(s, server) {
		fmt.Println(m.What)
	}

	// Before signing: can server.json record a bundle at this URL?
	url := "https://github.com/acme/weather/releases/download/v1.2.0/weather.etdi.json"
	if err := registry.CanSetEtdiMeta(doc, url); err != nil {
		panic(err)
	}
	// After signing: record the bundle file's digest.
	bundle := []byte(`{"dsseEnvelope": "..."}`)
	out, err := registry.SetEtdiMeta(doc, registry.EtdiMeta{Bundle: url, Digest: registry.Digest(bundle)})
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.Contains(string(out), `"dev.etdi"`))
	// Output:
	// io.github.acme/weather weather 1.2.0 [https://mcp.acme.example/weather] npm @acme/weather-mcp@1.2.0 (sha512-AAAA)
	// npm @acme/weather-mcp@1.2.0
	// true
}
