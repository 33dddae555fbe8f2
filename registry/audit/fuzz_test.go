package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/registrytest"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/registry/audit"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/trust"
)

// serveBytes answers every request with the same body, as a bundle host
// chosen by an attacker may.
type serveBytes []byte

func (b serveBytes) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Body: io.NopCloser(bytes.NewReader(b)),
		Header: http.Header{}, Request: r}, nil
}

// FuzzJudge judges hostile entries (any server.json) with hostile bundles
// (any bytes, with the entry's digest made to match when fix is set, so
// that verification runs on them): Judge never panics, and every verdict
// is consistent: a known status, the exit code its findings set, signed
// exactly when the entry claims a bundle, and passing only without an
// error finding.
func FuzzJudge(f *testing.F) {
	priv, err := keys.Generate(keys.Ed25519)
	if err != nil {
		f.Fatal(err)
	}
	p := trust.New()
	if _, err := p.AddKey("acme", trust.Key{PublicKey: priv.Public()}); err != nil {
		f.Fatal(err)
	}
	s, err := keys.Signer(priv)
	if err != nil {
		f.Fatal(err)
	}
	m, err := etdi.ParseManifest([]byte(`{"provider": {"id": "acme"}, "server": {"name": "weather", "version": "1.0.0", "registryName": "io.github.acme/weather",
  "artifacts": [{"type": "npm", "name": "@acme/weather", "version": "1.0.0", "digest": "` + registrytest.NPMIntegrity("w") + `"}]},
 "tools": [{"version": "1.0.0", "permissions": [], "definition": {"name": "get_weather", "description": "Weather.", "inputSchema": {"type": "object"}}}]}`))
	if err != nil {
		f.Fatal(err)
	}
	bundle, err := sign.Sign(m, s, priv.Public(), sign.Options{})
	if err != nil {
		f.Fatal(err)
	}
	b := bundle.Marshal()
	doc := []byte(`{"$schema": "` + registrytest.SchemaURL + `", "name": "io.github.acme/weather", "version": "1.0.0",
 "packages": [{"registryType": "npm", "identifier": "@acme/weather", "version": "1.0.0", "transport": {"type": "stdio"}}]}`)
	signed, err := registry.SetEtdiMeta(doc, registry.EtdiMeta{Bundle: "https://example.com/w.etdi.json", Digest: registry.Digest(b)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(signed, b, false)
	f.Add(signed, b[:len(b)/2], true)
	f.Add(doc, b, false)
	f.Add([]byte(`{"name": "io.github.evil/weather", "version": "1.0.0", "_meta": {"io.modelcontextprotocol.registry/publisher-provided": {"dev.etdi": {"bundle": "https://x.example/b", "digest": "sha256:`+string(bytes.Repeat([]byte("0"), 64))+`"}}}}`), b, true)
	f.Add([]byte(`{"name": "a/b", "version": "1", "_meta": {"io.modelcontextprotocol.registry/publisher-provided": {"dev.etdi": 1}}}`), []byte("{}"), false)

	f.Fuzz(func(t *testing.T, doc, bundle []byte, fix bool) {
		s, err := registry.ParseServerJSON(doc)
		if err != nil {
			return
		}
		meta, claims, metaErr := s.EtdiMeta()
		if fix && claims {
			meta.Digest = registry.Digest(bundle)
			if doc, err = registry.SetEtdiMeta(doc, meta); err != nil {
				return
			}
			if s, err = registry.ParseServerJSON(doc); err != nil {
				t.Fatalf("SetEtdiMeta wrote a server.json that does not parse: %v", err)
			}
		}
		v := audit.Judge(context.Background(), registry.Entry{Server: s}, audit.Options{Trust: p,
			HTTP: &http.Client{Transport: serveBytes(bundle)}})
		statuses := []audit.Status{audit.Approved, audit.Verified, audit.Unsigned, audit.ApprovalRequired, audit.Blocked, audit.Deleted, audit.Error}
		if !slices.Contains(statuses, v.Status) {
			t.Fatalf("status %q", v.Status)
		}
		if v.Status == audit.Error {
			t.Fatalf("not judged: %s", v.Error)
		}
		if v.Signed != (claims || metaErr != nil) {
			t.Fatalf("signed %v, the entry claims a bundle: %v (%v)", v.Signed, claims, metaErr)
		}
		code := finding.ExitCode(v.Findings)
		if v.Signed && !v.SignatureVerified {
			code = finding.Worse(code, finding.ExitSignature)
		}
		if code != v.ExitCode {
			t.Fatalf("exit %d, findings say %d: %+v", v.ExitCode, code, v.Findings)
		}
		if v.Pass() && (v.ExitCode != 0 || (v.Signed && (!v.SignatureVerified || !v.Bound))) {
			t.Fatalf("passes: %+v", v)
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	})
}
