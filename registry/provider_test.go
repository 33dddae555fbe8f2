package registry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
)

const providerJSON = `{
  "name": "io.github.acme/weather",
  "version": "1.2.0",
  "packages": [
    {"registryType": "npm", "identifier": "@acme/weather-mcp", "version": "1.2.0", "transport": {"type": "stdio"}},
    {"registryType": "mcpb", "identifier": "https://github.com/acme/weather/releases/download/v1.2.0/weather-1.2.0.mcpb", "version": "1.2.0", "fileSha256": "` + hexA + `", "transport": {"type": "stdio"}},
    {"registryType": "oci", "identifier": "ghcr.io/acme/weather@sha256:` + hexB + `", "transport": {"type": "stdio"}}
  ],
  "remotes": [
    {"type": "streamable-http", "url": "https://mcp.acme.example/weather"}
  ]
}`

const (
	hexA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hexB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

var weatherNPM = etdi.Artifact{Type: etdi.ArtifactNPM, Name: "@acme/weather-mcp", Version: "1.2.0", Digest: "sha512-AAAA"}

// weatherMCPB is the MCPB file of providerJSON, as its manifest.json
// names it.
var weatherMCPB = etdi.Artifact{Type: etdi.ArtifactMCPB, Name: "acme-weather", Version: "1.2.0", Digest: "sha256:" + hexA}

// resolveWeather resolves providerJSON's packages: the npm package to
// weatherNPM, the MCPB file to weatherMCPB.
func resolveWeather(p Package) (etdi.Artifact, error) {
	if p.RegistryType == PackageMCPB {
		return weatherMCPB, nil
	}
	return weatherNPM, nil
}

// resolveTo resolves every package to a.
func resolveTo(a etdi.Artifact) func(Package) (etdi.Artifact, error) {
	return func(Package) (etdi.Artifact, error) { return a, nil }
}

func mustParse(t *testing.T, doc string) *ServerJSON {
	t.Helper()
	s, err := ParseServerJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestManifestServer(t *testing.T) {
	s := mustParse(t, providerJSON)
	var asked []string
	server, problems, err := ManifestServer(s, func(p Package) (etdi.Artifact, error) {
		asked = append(asked, PackageLabel(p))
		return resolveWeather(p)
	})
	if err != nil || len(problems) != 0 {
		t.Fatalf("err %v, problems %v", err, problems)
	}
	if server.RegistryName != "io.github.acme/weather" || server.Name != "weather" || server.Version != "1.2.0" {
		t.Errorf("server %+v", server)
	}
	if len(server.Endpoints) != 1 || server.Endpoints[0] != "https://mcp.acme.example/weather" {
		t.Errorf("endpoints %v", server.Endpoints)
	}
	want := []etdi.Artifact{
		weatherNPM,
		weatherMCPB,
		{Type: etdi.ArtifactOCI, Name: "ghcr.io/acme/weather", Digest: "sha256:" + hexB},
	}
	if len(server.Artifacts) != len(want) {
		t.Fatalf("artifacts %v, want %v", server.Artifacts, want)
	}
	for i := range want {
		if server.Artifacts[i] != want[i] {
			t.Errorf("artifact %d: %+v, want %+v", i, server.Artifacts[i], want[i])
		}
	}
	// The image's digest is server.json's: only the npm package and the
	// MCPB file are resolved.
	if len(asked) != 2 || asked[0] != "npm @acme/weather-mcp@1.2.0" || !strings.HasPrefix(asked[1], "mcpb ") {
		t.Errorf("resolved %v", asked)
	}
	if got := Compare(s, server); len(got) != 0 {
		t.Errorf("Compare of the derived server: %v", got)
	}
}

// A launch that runs another version of the package than the one
// server.json names does not bind it: init fails rather than signing a
// bundle clients would refuse.
func TestManifestServerResolvedOtherVersion(t *testing.T) {
	s := mustParse(t, providerJSON)
	other := weatherNPM
	other.Version = "1.1.0"
	server, problems, err := ManifestServer(s, func(p Package) (etdi.Artifact, error) {
		if p.RegistryType == PackageMCPB {
			return weatherMCPB, nil
		}
		return other, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || problems[0].What != "npm @acme/weather-mcp@1.2.0" || !strings.Contains(problems[0].Why, "what the launch runs, npm @acme/weather-mcp@1.1.0") {
		t.Fatalf("problems %v", problems)
	}
	// The other version is not written into the manifest.
	for _, a := range server.Artifacts {
		if a.Type == etdi.ArtifactNPM {
			t.Errorf("artifact %v kept", a)
		}
	}
}

func TestManifestServerUnresolved(t *testing.T) {
	s := mustParse(t, providerJSON)
	for name, resolve := range map[string]func(Package) (etdi.Artifact, error){
		"nil":   nil,
		"error": func(Package) (etdi.Artifact, error) { return etdi.Artifact{}, errors.New("not in the npx cache") },
	} {
		server, problems, err := ManifestServer(s, resolve)
		if err != nil {
			t.Fatal(err)
		}
		// The npm package and the MCPB file need resolving; the image's
		// digest is server.json's.
		if len(problems) != 2 || problems[0].What != "npm @acme/weather-mcp@1.2.0" || !strings.HasPrefix(problems[1].What, "mcpb ") {
			t.Fatalf("%s: problems %v", name, problems)
		}
		if name == "error" && !strings.Contains(problems[0].Why, "not in the npx cache") {
			t.Errorf("%s: the reason is lost: %v", name, problems)
		}
		if len(server.Artifacts) != 1 {
			t.Errorf("%s: artifacts %v", name, server.Artifacts)
		}
	}
}

func TestManifestServerRefuses(t *testing.T) {
	variables := `{"name": "io.github.acme/weather", "version": "1.0.0",
	  "remotes": [{"type": "streamable-http", "url": "https://{tenant}.acme.example/mcp", "variables": {"tenant": {"isRequired": true}}}]}`
	if _, _, err := ManifestServer(mustParse(t, variables), nil); err == nil || !strings.Contains(err.Error(), "{variables}") {
		t.Errorf("a remote URL with variables: %v", err)
	}
	plain := `{"name": "io.github.acme/weather", "version": "1.0.0",
	  "remotes": [{"type": "streamable-http", "url": "http://mcp.acme.example/mcp"}]}`
	if _, _, err := ManifestServer(mustParse(t, plain), nil); err == nil {
		t.Error("a remote over plain http to another host was taken as an endpoint")
	}
	nuget := `{"name": "io.github.acme/weather", "version": "1.0.0",
	  "packages": [{"registryType": "nuget", "identifier": "Acme.Weather", "version": "1.0.0", "transport": {"type": "stdio"}}]}`
	_, problems, err := ManifestServer(mustParse(t, nuget), resolveTo(weatherNPM))
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0].Why, "cannot bind nuget") {
		t.Errorf("a NuGet package: %v, %v", err, problems)
	}
}

func TestCompare(t *testing.T) {
	s := mustParse(t, providerJSON)
	good, problems, err := ManifestServer(s, resolveWeather)
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	clone := func() etdi.Server {
		c := good
		c.Artifacts = append([]etdi.Artifact(nil), good.Artifacts...)
		c.Endpoints = append([]string(nil), good.Endpoints...)
		return c
	}
	for _, c := range []struct {
		name, what, why string
		edit            func(*etdi.Server)
	}{
		{"another registry name", "name", "io.github.evil/weather", func(s *etdi.Server) { s.RegistryName = "io.github.evil/weather" }},
		{"no registry name", "name", "no server.registryName", func(s *etdi.Server) { s.RegistryName = "" }},
		{"another version", "version", "1.1.0", func(s *etdi.Server) { s.Version = "1.1.0" }},
		{"another npm version", "npm @acme/weather-mcp@1.2.0", "@1.1.0", func(s *etdi.Server) { s.Artifacts[0].Version = "1.1.0" }},
		{"another MCPB file", "mcpb ", "another file", func(s *etdi.Server) { s.Artifacts[1].Digest = "sha256:" + hexB }},
		{"another image", "oci ", "sha256:" + hexA, func(s *etdi.Server) { s.Artifacts[2].Digest = "sha256:" + hexA }},
		{"a remote outside the endpoints", "remote https://mcp.acme.example/weather", "not covered", func(s *etdi.Server) { s.Endpoints = []string{"https://mcp.acme.example/other"} }},
	} {
		srv := clone()
		c.edit(&srv)
		got := Compare(s, srv)
		if len(got) != 1 || !strings.HasPrefix(got[0].What, c.what) || !strings.Contains(got[0].Why, c.why) {
			t.Errorf("%s: %v", c.name, got)
		}
	}
	// The same server.json with its members in another order and other
	// whitespace is the same entry.
	reordered := `{"remotes":[{"url":"https://mcp.acme.example/weather","type":"streamable-http"}],
	"packages":[{"version":"1.2.0","identifier":"@acme/weather-mcp","registryType":"npm","transport":{"type":"stdio"}},
	{"transport":{"type":"stdio"},"fileSha256":"` + hexA + `","version":"1.2.0","identifier":"https://github.com/acme/weather/releases/download/v1.2.0/weather-1.2.0.mcpb","registryType":"mcpb"},
	{"identifier":"ghcr.io/acme/weather@sha256:` + hexB + `","registryType":"oci","transport":{"type":"stdio"}}],
	"version":"1.2.0","name":"io.github.acme/weather"}`
	if got := Compare(mustParse(t, reordered), good); len(got) != 0 {
		t.Errorf("a reordered server.json: %v", got)
	}
}

func TestCanSetEtdiMeta(t *testing.T) {
	doc := []byte(weatherJSON)
	if err := CanSetEtdiMeta(doc, "https://github.com/acme/weather/releases/download/v1.2.0/weather.etdi.json"); err != nil {
		t.Fatal(err)
	}
	if err := CanSetEtdiMeta(doc, "http://127.0.0.1:8080/weather.etdi.json"); err != nil {
		t.Errorf("http to a loopback host: %v", err)
	}
	if err := CanSetEtdiMeta(doc, "http://releases.acme.example/weather.etdi.json"); err == nil {
		t.Error("a bundle URL over plain http was accepted")
	}
	big := strings.Replace(weatherJSON, `"x-later-member"`, `"_meta": {"`+PublisherProvidedKey+`": {"acme": "`+strings.Repeat("x", MaxPublisherMeta-150)+`"}}, "x-later-member"`, 1)
	if err := CanSetEtdiMeta([]byte(big), "https://acme.example/w.etdi.json"); err == nil || !strings.Contains(err.Error(), "4096") {
		t.Errorf("a result over the registry's limit: %v", err)
	}
	// The check measures what SetEtdiMeta writes, whatever the digest.
	fits := strings.Replace(weatherJSON, `"x-later-member"`, `"_meta": {"`+PublisherProvidedKey+`": {"acme": "`+strings.Repeat("x", MaxPublisherMeta-250)+`"}}, "x-later-member"`, 1)
	if err := CanSetEtdiMeta([]byte(fits), "https://acme.example/w.etdi.json"); err != nil {
		t.Fatalf("within the limit: %v", err)
	}
	if _, err := SetEtdiMeta([]byte(fits), EtdiMeta{Bundle: "https://acme.example/w.etdi.json", Digest: Digest([]byte("bundle"))}); err != nil {
		t.Errorf("CanSetEtdiMeta accepted what SetEtdiMeta refuses: %v", err)
	}
}

func TestStdioPackage(t *testing.T) {
	s := mustParse(t, `{"name": "io.github.acme/weather", "version": "1.0.0", "packages": [
	  {"registryType": "mcpb", "identifier": "https://acme.example/w.mcpb", "fileSha256": "`+hexA+`", "transport": {"type": "stdio"}},
	  {"registryType": "npm", "identifier": "w-http", "version": "1.0.0", "transport": {"type": "streamable-http", "url": "http://127.0.0.1:3000/mcp"}},
	  {"registryType": "pypi", "identifier": "acme-weather", "version": "1.0.0", "transport": {"type": "stdio"}}]}`)
	p, ok := s.StdioPackage()
	if !ok || p.Identifier != "acme-weather" {
		t.Errorf("StdioPackage: %v %+v", ok, p)
	}
	if _, ok := mustParse(t, `{"name": "io.github.acme/w", "version": "1"}`).StdioPackage(); ok {
		t.Error("a server.json without packages has a stdio package")
	}
}

// ResolvePackage resolves a real npm package from the lockfile that
// installed it, as a host's npx launch in that project would run it.
func TestResolvePackageNPM(t *testing.T) {
	dir, err := filepath.Abs("../testdata/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-memory")); err != nil {
		t.Skip("testdata/mcp's packages are not installed (run npm ci there): ", err)
	}
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(lock), `"node_modules/@modelcontextprotocol/server-memory": {`)
	_, rest, _ = strings.Cut(rest, `"version": "`)
	version, _, _ := strings.Cut(rest, `"`)
	p := Package{RegistryType: PackageNPM, Identifier: "@modelcontextprotocol/server-memory", Version: version, Transport: Transport{Type: TransportStdio}}
	a, from, err := ResolvePackage(context.Background(), p, nil, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Type != etdi.ArtifactNPM || a.Name != p.Identifier || a.Version != version || !strings.HasPrefix(a.Digest, "sha512-") || from == "" {
		t.Errorf("resolved %+v from %q", a, from)
	}
	p.Version = "0.0.1"
	if _, _, err := ResolvePackage(context.Background(), p, nil, dir, nil); err == nil {
		t.Error("a version nothing installed was resolved")
	}
	if _, _, err := ResolvePackage(context.Background(), Package{RegistryType: PackageMCPB, Identifier: "https://acme.example/w.mcpb"}, nil, dir, nil); err == nil {
		t.Error("an MCPB was resolved as a launch")
	}
}

// An MCPB file other than the one server.json names (another SHA-256) is
// not taken for it.
func TestManifestServerOtherMCPB(t *testing.T) {
	s := mustParse(t, providerJSON)
	server, problems, err := ManifestServer(s, func(p Package) (etdi.Artifact, error) {
		if p.RegistryType == PackageMCPB {
			other := weatherMCPB
			other.Digest = "sha256:" + hexB
			return other, nil
		}
		return weatherNPM, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || !strings.HasPrefix(problems[0].What, "mcpb ") || !strings.Contains(problems[0].Why, "another file") {
		t.Fatalf("problems %v", problems)
	}
	for _, a := range server.Artifacts {
		if a.Type == etdi.ArtifactMCPB {
			t.Errorf("artifact %v kept", a)
		}
	}
}
