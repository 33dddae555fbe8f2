package registrytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

const schemaURL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

// serverJSON is a server.json document of name at version with one npm
// package and one Streamable HTTP remote.
func serverJSON(name, version string) []byte {
	slug := strings.NewReplacer("/", "-", ".", "-").Replace(name)
	return []byte(fmt.Sprintf(`{
  "$schema": %q,
  "name": %q,
  "description": "A test server",
  "version": %q,
  "packages": [
    {"registryType": "npm", "identifier": "@acme/%s", "version": %q, "transport": {"type": "stdio"}}
  ],
  "remotes": [
    {"type": "streamable-http", "url": "https://%s.example.com/mcp/%s"}
  ]
}`, schemaURL, name, version, slug, version, slug, version))
}

type entry struct {
	Server struct {
		Name     string `json:"name"`
		Version  string `json:"version"`
		Packages []struct {
			RegistryType string `json:"registryType"`
			Identifier   string `json:"identifier"`
			Version      string `json:"version"`
		} `json:"packages"`
		Remotes []struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		} `json:"remotes"`
	} `json:"server"`
	Meta struct {
		Official struct {
			Status      string    `json:"status"`
			PublishedAt time.Time `json:"publishedAt"`
			UpdatedAt   time.Time `json:"updatedAt"`
			IsLatest    bool      `json:"isLatest"`
		} `json:"io.modelcontextprotocol.registry/official"`
	} `json:"_meta"`
}

type page struct {
	Servers  []entry `json:"servers"`
	Metadata struct {
		NextCursor string `json:"nextCursor"`
		Count      int    `json:"count"`
	} `json:"metadata"`
}

// get GETs path of the registry with plain HTTP and decodes the JSON
// answer into v; it returns the status.
func get(t *testing.T, r *Registry, path string, v any) int {
	t.Helper()
	resp, err := http.Get(r.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, b)
		}
	}
	return resp.StatusCode
}

// listAll follows the cursors of GET /v0.1/servers?QUERY and returns the
// name@version of every entry, and the number of entries of each page.
func listAll(t *testing.T, r *Registry, query url.Values) ([]string, []int) {
	t.Helper()
	var got []string
	var sizes []int
	pages := 0
	for {
		var p page
		if st := get(t, r, "/v0.1/servers?"+query.Encode(), &p); st != http.StatusOK {
			t.Fatalf("list %s: status %d", query.Encode(), st)
		}
		pages++
		if p.Metadata.Count != len(p.Servers) {
			t.Fatalf("page %d: count %d, %d servers", pages, p.Metadata.Count, len(p.Servers))
		}
		for _, e := range p.Servers {
			got = append(got, e.Server.Name+"@"+e.Server.Version)
		}
		sizes = append(sizes, len(p.Servers))
		if p.Metadata.NextCursor == "" {
			return got, sizes
		}
		if pages > 1000 {
			t.Fatal("more than 1000 pages")
		}
		query.Set("cursor", p.Metadata.NextCursor)
	}
}

// TestRegistry publishes through the real registry's publish API and reads
// its answers back through the API hosts read: one version by name and
// version, cursor pagination, updated_since, and a deleted version that no
// longer lists.
func TestRegistry(t *testing.T) {
	r := Start(t)
	ctx := context.Background()

	names := []string{"io.github.acme/weather", "io.github.acme/tides", "com.example.mcp/clock"}
	for _, n := range names {
		if err := r.Publish(ctx, serverJSON(n, "1.0.0")); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Publish(ctx, serverJSON("io.github.acme/weather", "1.1.0")); err != nil {
		t.Fatal(err)
	}

	// One version, the name's "/" escaped as the API wants it.
	var e entry
	if st := get(t, r, VersionPath("io.github.acme/weather", "1.0.0"), &e); st != http.StatusOK {
		t.Fatalf("get: status %d", st)
	}
	if e.Server.Name != "io.github.acme/weather" || e.Server.Version != "1.0.0" {
		t.Fatalf("got %s@%s", e.Server.Name, e.Server.Version)
	}
	if len(e.Server.Packages) != 1 || e.Server.Packages[0].Identifier != "@acme/io-github-acme-weather" || e.Server.Packages[0].Version != "1.0.0" || e.Server.Packages[0].RegistryType != "npm" {
		t.Fatalf("packages: %+v", e.Server.Packages)
	}
	if len(e.Server.Remotes) != 1 || e.Server.Remotes[0].URL != "https://io-github-acme-weather.example.com/mcp/1.0.0" {
		t.Fatalf("remotes: %+v", e.Server.Remotes)
	}
	if e.Meta.Official.Status != "active" || e.Meta.Official.IsLatest {
		t.Fatalf("official: %+v (1.1.0 is the latest)", e.Meta.Official)
	}
	var latest entry
	if st := get(t, r, VersionPath("io.github.acme/weather", "latest"), &latest); st != http.StatusOK || latest.Server.Version != "1.1.0" || !latest.Meta.Official.IsLatest {
		t.Fatalf("latest: status %d, %s %+v", st, latest.Server.Version, latest.Meta.Official)
	}
	if st := get(t, r, VersionPath("io.github.acme/weather", "9.9.9"), nil); st != http.StatusNotFound {
		t.Fatalf("an unknown version: status %d, want 404", st)
	}

	// Pages of two: four entries in two full pages (the registry gives a
	// cursor after every full page, so a third, empty one may follow),
	// each entry once.
	all, sizes := listAll(t, r, url.Values{"limit": {"2"}})
	if len(all) != 4 || len(sizes) < 2 || sizes[0] != 2 || sizes[1] != 2 || len(sizes) > 3 || (len(sizes) == 3 && sizes[2] != 0) {
		t.Fatalf("limit=2: %d entries in pages of %v: %v", len(all), sizes, all)
	}
	seen := map[string]bool{}
	for _, s := range all {
		if seen[s] {
			t.Fatalf("%s listed twice: %v", s, all)
		}
		seen[s] = true
	}

	// updated_since lists only what changed after the time given: the
	// time of the last change so far, as the registry reports it.
	var p page
	if st := get(t, r, "/v0.1/servers?limit=100", &p); st != http.StatusOK || len(p.Servers) != 4 {
		t.Fatalf("list: status %d, %d servers", st, len(p.Servers))
	}
	var mark time.Time
	for _, e := range p.Servers {
		if e.Meta.Official.UpdatedAt.After(mark) {
			mark = e.Meta.Official.UpdatedAt
		}
	}
	if err := r.Publish(ctx, serverJSON("io.github.acme/later", "0.1.0")); err != nil {
		t.Fatal(err)
	}
	since, _ := listAll(t, r, url.Values{"updated_since": {mark.Format(time.RFC3339Nano)}})
	if len(since) != 1 || since[0] != "io.github.acme/later@0.1.0" {
		t.Fatalf("updated_since %s: %v", mark.Format(time.RFC3339Nano), since)
	}

	// A deleted version no longer lists, nor is it served by name; the
	// other versions of its server still are.
	if err := r.SetStatus(ctx, "io.github.acme/tides", "1.0.0", "deleted"); err != nil {
		t.Fatal(err)
	}
	all, _ = listAll(t, r, url.Values{"limit": {"100"}})
	for _, s := range all {
		if s == "io.github.acme/tides@1.0.0" {
			t.Fatalf("a deleted version lists: %v", all)
		}
	}
	if len(all) != 4 {
		t.Fatalf("after deleting one of five: %v", all)
	}
	if st := get(t, r, VersionPath("io.github.acme/tides", "1.0.0"), nil); st != http.StatusNotFound {
		t.Fatalf("a deleted version: status %d, want 404", st)
	}
	// A deprecated one still lists, marked so.
	if err := r.SetStatus(ctx, "com.example.mcp/clock", "1.0.0", "deprecated"); err != nil {
		t.Fatal(err)
	}
	var dep entry
	if st := get(t, r, VersionPath("com.example.mcp/clock", "1.0.0"), &dep); st != http.StatusOK || dep.Meta.Official.Status != "deprecated" {
		t.Fatalf("deprecated: status %d, %+v", st, dep.Meta.Official)
	}
}

// TestPublishRefused shows the registry's own checks still apply to what
// the fixture publishes: a name outside a token's permissions, an
// anonymous publisher outside its namespace, a remote on 127.0.0.1, a
// version published twice, and a token signed with another key are all
// refused.
func TestPublishRefused(t *testing.T) {
	r := Start(t)
	ctx := context.Background()
	status := func(err error) int {
		var se *StatusError
		if !errors.As(err, &se) {
			t.Fatalf("want a refusal, got %v", err)
		}
		return se.Status
	}
	doc := serverJSON("io.github.acme/weather", "1.0.0")

	if err := r.PublishAnonymous(ctx, doc); status(err) != http.StatusForbidden {
		t.Fatalf("anonymous publisher outside its namespace: %v", err)
	}
	if err := r.PublishAnonymous(ctx, serverJSON("io.modelcontextprotocol.anonymous/weather", "1.0.0")); err != nil {
		t.Fatalf("anonymous publisher in its namespace: %v", err)
	}

	other := &Registry{URL: r.URL, http: r.http}
	other.key = Start(t).key // a key the registry does not hold
	if err := other.Publish(ctx, doc); status(err) != http.StatusUnauthorized {
		t.Fatalf("token of another key: %v", err)
	}

	narrow := r.Token(Permission{"publish", "io.github.other/*"})
	if _, err := r.call(ctx, http.MethodPost, "/v0.1/publish", narrow, doc); status(err) != http.StatusForbidden {
		t.Fatalf("name outside the token's permissions: %v", err)
	}

	loop := strings.Replace(string(serverJSON("io.github.acme/loop", "1.0.0")), "https://io-github-acme-loop.example.com", "https://127.0.0.1:8443", 1)
	if err := r.Publish(ctx, []byte(loop)); status(err) != http.StatusUnprocessableEntity && status(err) != http.StatusBadRequest {
		t.Fatalf("remote on 127.0.0.1: %v", err)
	}

	if err := r.Publish(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if err := r.Publish(ctx, doc); status(err) != http.StatusBadRequest {
		t.Fatalf("a version published twice: %v", err)
	}
}

// TestSharedOpenAPI shows the tests of one binary get one shared registry,
// and that it serves the OpenAPI document of its own API, paths of the
// v0.1 API that hosts read included.
func TestSharedOpenAPI(t *testing.T) {
	r := Shared(t)
	if again := Shared(t); again != r {
		t.Fatal("two shared registries in one test binary")
	}
	b, err := r.OpenAPI(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                     `json:"openapi"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%.500s", err, b)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	for _, p := range []string{"/v0.1/servers", "/v0.1/servers/{serverName}/versions", "/v0.1/servers/{serverName}/versions/{version}", "/v0.1/publish"} {
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("no path %s in the OpenAPI document", p)
		}
	}
}

// TestPublishMany publishes many entries with several requests at a time:
// each is listed once.
func TestPublishMany(t *testing.T) {
	r := Start(t)
	var docs [][]byte
	want := map[string]bool{}
	for i := range 60 {
		name := fmt.Sprintf("io.github.many/server-%02d", i)
		docs = append(docs, serverJSON(name, "1.0.0"))
		want[name+"@1.0.0"] = true
	}
	if err := r.PublishMany(context.Background(), docs, 8); err != nil {
		t.Fatal(err)
	}
	all, _ := listAll(t, r, url.Values{"limit": {"25"}})
	if len(all) != len(want) {
		t.Fatalf("%d entries listed, %d published", len(all), len(want))
	}
	for _, s := range all {
		if !want[s] {
			t.Fatalf("%s listed twice, or never published", s)
		}
		delete(want, s)
	}
	// A refusal stops the rest and is returned.
	err := r.PublishMany(context.Background(), docs[:3], 2)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusBadRequest {
		t.Fatalf("publishing again: %v", err)
	}
}
