package registrytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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
}`, SchemaURL, name, version, slug, version, slug, version))
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
	r.Stop() // a test stopping it stops it for none of the others
	if !r.healthy(context.Background()) {
		t.Fatal("the shared registry stopped")
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

// TestWithoutCache starts a registry where there is no cache directory
// for the database cluster: PostgreSQL's initdb makes one for the
// registry alone.
func TestWithoutCache(t *testing.T) {
	bin := need(t)
	template.Lock()
	saved := template.dir
	template.dir = ""
	template.Unlock()
	defer func() {
		template.Lock()
		template.dir = saved
		template.Unlock()
	}()
	t.Setenv("XDG_CACHE_HOME", "relative") // os.UserCacheDir refuses it
	r, err := start(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	log, err := os.ReadFile(filepath.Join(r.LogDir, "postgres.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "no cached database cluster") {
		t.Fatalf("the cluster was not made by initdb:\n%s", log)
	}
	if err := r.Publish(context.Background(), serverJSON("io.github.acme/nocache", "1.0.0")); err != nil {
		t.Fatal(err)
	}
}

// withMeta is serverJSON with the publisher-provided _meta object meta.
func withMeta(t *testing.T, name, version string, meta map[string]any) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(serverJSON(name, version), &doc); err != nil {
		t.Fatal(err)
	}
	doc["_meta"] = map[string]any{"io.modelcontextprotocol.registry/publisher-provided": meta}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPublisherProvided shows what the registry does with a publisher's
// own _meta: served back as published under the entry's server._meta,
// up to 4096 bytes as Go's encoding/json writes the object (compact,
// members sorted, "&", "<" and ">" escaped as \u0026...), refused above.
func TestPublisherProvided(t *testing.T) {
	r := Start(t)
	ctx := context.Background()
	etdi := map[string]any{
		"bundle": "https://example.com/releases/weather.etdi.json?a=1&b=2",
		"digest": "sha256:" + strings.Repeat("ab", 32),
	}
	sized := func(n int) map[string]any {
		meta := map[string]any{"dev.etdi": etdi, "pad": ""}
		b, _ := json.Marshal(meta)
		meta["pad"] = strings.Repeat("x", n-len(b))
		if b, _ := json.Marshal(meta); len(b) != n {
			t.Fatalf("made %d bytes, want %d", len(b), n)
		}
		return meta
	}
	if err := r.Publish(ctx, withMeta(t, "io.github.acme/meta", "1.0.0", sized(4096))); err != nil {
		t.Fatalf("4096 bytes: %v", err)
	}
	err := r.Publish(ctx, withMeta(t, "io.github.acme/meta", "1.0.1", sized(4097)))
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusBadRequest || !strings.Contains(se.Body, "4KB") {
		t.Fatalf("4097 bytes: %v", err)
	}
	b, err := r.Get(ctx, "io.github.acme/meta", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Server struct {
			Meta map[string]map[string]json.RawMessage `json:"_meta"`
		} `json:"server"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(e.Server.Meta["io.modelcontextprotocol.registry/publisher-provided"]["dev.etdi"], &got); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	if got["bundle"] != etdi["bundle"] || got["digest"] != etdi["digest"] {
		t.Fatalf("served %v", got)
	}
}

// TestEdit changes a published version's content under the same name and
// version, as a registry's operator can: the entry served changes, and
// an incremental listing (updated_since) shows it changed.
func TestEdit(t *testing.T) {
	r := Start(t)
	ctx := context.Background()
	name := "io.github.acme/edited"
	if err := r.Publish(ctx, serverJSON(name, "1.0.0")); err != nil {
		t.Fatal(err)
	}
	var before entry
	if st := get(t, r, VersionPath(name, "1.0.0"), &before); st != http.StatusOK {
		t.Fatalf("status %d", st)
	}
	edited := strings.Replace(string(serverJSON(name, "1.0.0")), `"identifier": "@acme/io-github-acme-edited", "version": "1.0.0"`, `"identifier": "@acme/io-github-acme-edited", "version": "6.6.6"`, 1)
	if edited == string(serverJSON(name, "1.0.0")) {
		t.Fatal("the edit changed nothing")
	}
	if err := r.Edit(ctx, []byte(edited)); err != nil {
		t.Fatal(err)
	}
	var after entry
	if st := get(t, r, VersionPath(name, "1.0.0"), &after); st != http.StatusOK {
		t.Fatalf("status %d", st)
	}
	if after.Server.Version != "1.0.0" || len(after.Server.Packages) != 1 || after.Server.Packages[0].Version != "6.6.6" {
		t.Fatalf("after the edit: %+v", after.Server)
	}
	since, _ := listAll(t, r, url.Values{"updated_since": {before.Meta.Official.UpdatedAt.Format(time.RFC3339Nano)}})
	if len(since) != 1 || since[0] != name+"@1.0.0" {
		t.Fatalf("updated_since before the edit: %v", since)
	}
	// An edit cannot make a version that was never published.
	var se *StatusError
	if err := r.Edit(ctx, serverJSON(name, "2.0.0")); !errors.As(err, &se) || se.Status != http.StatusNotFound {
		t.Fatalf("editing an unpublished version: %v", err)
	}
}
