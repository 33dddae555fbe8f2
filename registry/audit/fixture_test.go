package audit_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/registrytest"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/trust"
)

// schemaURL is the server.json schema the registry requires documents to name.
const schemaURL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

// world is what the tests publish to: the real registry (shared by the
// tests of the package, each using a namespace of its own), a server on
// 127.0.0.1 hosting bundles as a release page does, and a provider key
// the trust policy trusts for provider "acme".
type world struct {
	t       testing.TB
	reg     *registrytest.Registry
	client  *registry.Client
	host    *bundleHost
	signer  crypto.Signer
	policy  *trust.Policy
	prefix  string // the test's own namespace suffix
	nextKey int
}

func newWorld(t testing.TB) *world {
	t.Helper()
	reg := registrytest.Shared(t)
	c, err := registry.NewClient(reg.URL)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := keys.Generate(keys.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	p := trust.New()
	if _, err := p.AddKey("acme", trust.Key{PublicKey: priv.Public()}); err != nil {
		t.Fatal(err)
	}
	return &world{t: t, reg: reg, client: c, host: newBundleHost(t), signer: priv, policy: p, prefix: unique()}
}

// unique is a fresh name part, so that tests sharing the registry never
// publish the same name twice.
func unique() string {
	b := make([]byte, 5)
	rand.Read(b)
	return fmt.Sprintf("t%x", b)
}

// name is a registry name in the test's own namespaces: ns is the
// owner, "acme" or "evil".
func (w *world) name(ns, server string) string {
	return "io.github." + ns + w.prefix + "/" + server
}

// npmIntegrity is a syntactically valid npm integrity string.
func npmIntegrity(seed string) string {
	h := make([]byte, 64)
	copy(h, seed)
	return "sha512-" + base64.StdEncoding.EncodeToString(h)
}

// bundleFor signs a manifest of provider acme for the server registered
// as regName, made of npm package pkg@version.
func (w *world) bundleFor(regName, pkg, version string, tools ...string) []byte {
	w.t.Helper()
	return w.bundleWith(regName, version, []any{map[string]any{"type": "npm", "name": pkg, "version": version, "digest": npmIntegrity(pkg + version)}}, tools...)
}

// bundleWith signs a manifest of provider acme for the server registered
// as regName, made of the artifacts given.
func (w *world) bundleWith(regName, version string, artifacts []any, tools ...string) []byte {
	w.t.Helper()
	if len(tools) == 0 {
		tools = []string{"get_weather"}
	}
	var ts []any
	for _, name := range tools {
		ts = append(ts, map[string]any{
			"version":     "1.0.0",
			"permissions": []any{map[string]any{"scope": "weather:read", "description": "Reads forecasts"}},
			"definition": map[string]any{"name": name, "description": "Get the weather for a city.",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}},
		})
	}
	server := "weather"
	if i := strings.LastIndex(regName, "/"); i >= 0 {
		server = regName[i+1:]
	}
	srv := map[string]any{"name": server, "version": version,
		"artifacts": artifacts}
	if regName != "" {
		srv["registryName"] = regName
	}
	doc, err := json.Marshal(map[string]any{"provider": map[string]any{"id": "acme", "name": "ACME"}, "server": srv, "tools": ts})
	if err != nil {
		w.t.Fatal(err)
	}
	m, err := etdi.ParseManifest(doc)
	if err != nil {
		w.t.Fatal(err)
	}
	s, err := keys.Signer(w.signer)
	if err != nil {
		w.t.Fatal(err)
	}
	b, err := sign.Sign(m, s, w.signer.Public(), sign.Options{})
	if err != nil {
		w.t.Fatal(err)
	}
	return b.Marshal()
}

// serverJSON is a server.json for name@version with one npm package,
// naming the bundle hosted at path (none: unsigned).
func (w *world) serverJSON(name, version, pkg, pkgVersion, path string, bundle []byte) []byte {
	w.t.Helper()
	doc := map[string]any{
		"$schema":     schemaURL,
		"name":        name,
		"description": "Weather forecasts",
		"version":     version,
		"packages": []any{map[string]any{"registryType": "npm", "identifier": pkg, "version": pkgVersion,
			"transport": map[string]any{"type": "stdio"}}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		w.t.Fatal(err)
	}
	if bundle == nil {
		return b
	}
	out, err := registry.SetEtdiMeta(b, registry.EtdiMeta{Bundle: w.host.url(path), Digest: registry.Digest(bundle)})
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

func (w *world) publish(doc []byte) {
	w.t.Helper()
	if err := w.reg.Publish(context.Background(), doc); err != nil {
		w.t.Fatalf("publishing: %v\n%s", err, doc)
	}
}

// entry returns the registry's entry of name@version.
func (w *world) entry(name, version string) registry.Entry {
	w.t.Helper()
	e, err := w.client.Get(context.Background(), name, version)
	if err != nil {
		w.t.Fatal(err)
	}
	return *e
}

// approve approves every tool of the bundle into the pin database at db,
// as etdi pin approve does after a check.
func (w *world) approve(db string, bundle []byte) string {
	w.t.Helper()
	r, err := guard.Observe(context.Background(), nil, guard.Options{Policy: w.policy, Bundle: bundle})
	if err != nil || r.Blocked() {
		w.t.Fatalf("observing the bundle: %v %+v", err, r.Findings)
	}
	s, err := pin.Open(db, pin.Options{})
	if err != nil {
		w.t.Fatal(err)
	}
	defer s.Close()
	if _, refused, err := s.Approve(r.Observation, pin.ApproveOptions{By: "test"}); err != nil || len(refused) > 0 {
		w.t.Fatalf("approving: %v %+v", err, refused)
	}
	return r.Server
}

// bundleHost serves bundles on 127.0.0.1, as a release page serves the
// files a server.json names; what it serves can be replaced.
type bundleHost struct {
	mu    sync.Mutex
	files map[string][]byte
	base  string
	hits  map[string]int
	// handler, when set, answers instead.
	handler http.HandlerFunc
}

func newBundleHost(t testing.TB) *bundleHost {
	h := &bundleHost{files: map[string][]byte{}, hits: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	h.base = "http://" + ln.Addr().String()
	return h
}

func (h *bundleHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.handler != nil {
		h.handler(w, r)
		return
	}
	h.mu.Lock()
	b, ok := h.files[r.URL.Path]
	h.hits[r.URL.Path]++
	h.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Write(b)
}

func (h *bundleHost) put(path string, b []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.files[path] = b
}

func (h *bundleHost) url(path string) string { return h.base + path }
