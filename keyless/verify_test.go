package keyless_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/keyless"
	"github.com/etdi-dev/etdi/sign"
	"github.com/sigstore/sigstore-go/pkg/root"
)

// statement is the demo weather manifest as a signed statement's payload.
// statementTime is when the statements of these tests were issued.
var statementTime = time.Now().Truncate(time.Second)

func statement(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("../cmd/etdi/demodata/weather.manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := etdi.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	// One issue time for every statement of the test run: a statement
	// made again to compare with a signed one is the same, whichever
	// second it is made in.
	_, payload, err := sign.Build(m, sign.Options{IssuedAt: statementTime})
	if err != nil {
		t.Fatal(err)
	}
	return payload
}

// signed is a bundle the instance signed for claims (nil: its GitHub
// release workflow), and the instance's trusted root.
func signed(t *testing.T, in *sigstoretest.Instance, claims map[string]any) ([]byte, root.TrustedMaterial) {
	t.Helper()
	if claims == nil {
		claims = in.GitHubClaims
	}
	b, err := keyless.Sign(context.Background(), statement(t), keyless.SignOptions{FulcioURL: in.URL, RekorURL: in.URL, IDToken: in.Token(claims)})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := root.NewTrustedRootFromJSON(in.TrustedRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	return b, tr
}

func edit(t *testing.T, b []byte, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Verify says who signed, from the certificate, and when, from the log.
func TestVerifySigner(t *testing.T) {
	in := sigstoretest.New(t)
	before := time.Now().Add(-time.Second)
	b, tr := signed(t, in, nil)
	kb, err := keyless.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	s, err := keyless.Verify(kb, tr)
	if err != nil {
		t.Fatal(err)
	}
	want := sigstoretest.GitHubIdentity("acme/weather", "refs/tags/v1.0.0", ".github/workflows/release.yml")
	if s.Issuer != sigstoretest.GitHubIssuer || s.Identity != want || s.Repository != "https://github.com/acme/weather" ||
		s.Ref != "refs/tags/v1.0.0" || s.Workflow != want {
		t.Fatalf("signer %+v", s)
	}
	if s.SignedAt.Before(before) || s.SignedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("signed at %s", s.SignedAt)
	}
	if !bytes.Equal(kb.Envelope.Payload, statement(t)) || len(kb.Envelope.Signatures) != 1 {
		t.Errorf("envelope %+v", kb.Envelope)
	}
	if id, iss, err := keyless.IdentityOf(b); err != nil || id != want || iss != sigstoretest.GitHubIssuer {
		t.Errorf("IdentityOf: %q %q %v", id, iss, err)
	}
	// Without a trusted root nothing verifies.
	if _, err := keyless.Verify(kb, nil); err == nil {
		t.Error("verified without a trusted root")
	}
	// Another instance's root: the chain does not verify.
	_, other := signed(t, sigstoretest.New(t), nil)
	if _, err := keyless.Verify(kb, other); err == nil {
		t.Error("verified against another root")
	}
}

// What Parse refuses: each a bundle etdi must not read.
func TestParseRefuses(t *testing.T) {
	in := sigstoretest.New(t)
	b, _ := signed(t, in, nil)
	if !keyless.IsBundle(b) {
		t.Fatal("IsBundle refuses a bundle")
	}
	for name, bad := range map[string][]byte{
		"oversized": append(bytes.Repeat([]byte(" "), keyless.MaxBundleSize), b...),
		"duplicate member": bytes.Replace(b, []byte(`{"dsseEnvelope":`),
			[]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","dsseEnvelope":`), 1),
		"version 0.2": edit(t, b, func(m map[string]any) { m["mediaType"] = "application/vnd.dev.sigstore.bundle.v0.2+json" }),
		"message signature": edit(t, b, func(m map[string]any) {
			delete(m, "dsseEnvelope")
			m["messageSignature"] = map[string]any{"messageDigest": map[string]any{"algorithm": "SHA2_256", "digest": base64.StdEncoding.EncodeToString(make([]byte, 32))},
				"signature": base64.StdEncoding.EncodeToString([]byte("sig"))}
		}),
		"other payload type": edit(t, b, func(m map[string]any) { m["dsseEnvelope"].(map[string]any)["payloadType"] = "text/plain" }),
		"two signatures": edit(t, b, func(m map[string]any) {
			env := m["dsseEnvelope"].(map[string]any)
			sigs := env["signatures"].([]any)
			env["signatures"] = append(sigs, sigs[0])
		}),
		"no signature": edit(t, b, func(m map[string]any) { m["dsseEnvelope"].(map[string]any)["signatures"] = []any{} }),
		"public key": edit(t, b, func(m map[string]any) {
			vm := m["verificationMaterial"].(map[string]any)
			delete(vm, "certificate")
			vm["publicKey"] = map[string]any{"hint": "x"}
		}),
		"unknown field": edit(t, b, func(m map[string]any) { m["extra"] = 1 }),
	} {
		if !bytes.Contains(bad, []byte("sigstore.bundle")) && name != "message signature" {
			t.Fatalf("%s: the edit lost the media type", name)
		}
		if _, err := keyless.Parse(bad); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	for name, not := range map[string][]byte{
		"etdi bundle":         []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"","signatures":[]}`),
		"other media type":    []byte(`{"mediaType":"application/json","note":"application/vnd.dev.sigstore.bundle"}`),
		"not JSON":            []byte(`application/vnd.dev.sigstore.bundle`),
		"media type as value": []byte(`{"x":"application/vnd.dev.sigstore.bundle.v0.3+json"}`),
	} {
		if keyless.IsBundle(not) {
			t.Errorf("%s: IsBundle", name)
		}
	}
	if keyless.IsBundle(append(bytes.Repeat([]byte(" "), keyless.MaxBundleSize), b...)) {
		t.Error("IsBundle of an oversized bundle")
	}
}

// What Verify refuses: a bundle without its log entry, a certificate
// without the signed certificate timestamp a CT log of the root asks for,
// a certificate expired when logged, and a certificate that names no
// issuer.
func TestVerifyRefuses(t *testing.T) {
	in := sigstoretest.New(t)
	b, tr := signed(t, in, nil)
	verify := func(data []byte, tm root.TrustedMaterial) error {
		kb, err := keyless.Parse(data)
		if err != nil {
			return err
		}
		_, err = keyless.Verify(kb, tm)
		return err
	}
	noLog := edit(t, b, func(m map[string]any) {
		delete(m["verificationMaterial"].(map[string]any), "tlogEntries")
	})
	if err := verify(noLog, tr); err == nil {
		t.Error("a bundle without a log entry verified")
	}
	in.WithCTLog = true
	withCT, err := root.NewTrustedRootFromJSON(in.TrustedRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := verify(b, withCT); err == nil {
		t.Error("a certificate without a signed certificate timestamp verified against a root with a CT log")
	}
	in.WithCTLog = false
	in.LogTimeOffset = 20 * time.Minute
	late, _ := signed(t, in, nil)
	if err := verify(late, tr); err == nil {
		t.Error("a certificate expired when logged verified")
	}
	in.LogTimeOffset = 0
	// A token whose issuer is empty: a certificate that names none.
	noIssuer := map[string]any{"iss": "", "sub": "ci@example.com"}
	if tok := in.Token(noIssuer); tok != "" {
		if nb, err := keyless.Sign(context.Background(), statement(t), keyless.SignOptions{FulcioURL: in.URL, RekorURL: in.URL, IDToken: tok}); err == nil {
			if err := verify(nb, tr); err == nil || !strings.Contains(err.Error(), "issuer") {
				t.Errorf("a certificate without an issuer: %v", err)
			}
		}
	}
}

// Sign refuses what would leak the identity token or sign nothing: no
// token, a payload that is not a statement, a service over plain http to
// another host; and a service's error that repeats the token does not
// show it.
func TestSignRefuses(t *testing.T) {
	payload := statement(t)
	ctx := context.Background()
	tok := "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXNlY3JldA"
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		http.Error(w, "bad token: "+r.Header.Get("Authorization"), http.StatusBadRequest)
	}))
	defer srv.Close()
	if _, err := keyless.Sign(ctx, payload, keyless.SignOptions{FulcioURL: srv.URL, RekorURL: srv.URL}); err == nil || !strings.Contains(err.Error(), "no identity token") {
		t.Errorf("signed without a token: %v", err)
	}
	if _, err := keyless.Sign(ctx, []byte(`{"not":"a statement"}`), keyless.SignOptions{FulcioURL: srv.URL, RekorURL: srv.URL, IDToken: tok}); err == nil || !strings.Contains(err.Error(), "not an etdi statement") {
		t.Errorf("signed a payload that is not a statement: %v", err)
	}
	for _, o := range []keyless.SignOptions{
		{FulcioURL: "http://fulcio.example", RekorURL: srv.URL, IDToken: tok},
		{FulcioURL: srv.URL, RekorURL: "http://rekor.example", IDToken: tok},
		{FulcioURL: "https://user:pw@fulcio.example", RekorURL: srv.URL, IDToken: tok},
	} {
		if _, err := keyless.Sign(ctx, payload, o); err == nil || !strings.Contains(err.Error(), "example") {
			t.Errorf("%s, %s: %v", o.FulcioURL, o.RekorURL, err)
		}
	}
	if hits != 0 {
		t.Fatalf("the token was sent while a service URL is refused (%d requests)", hits)
	}
	_, err := keyless.Sign(ctx, payload, keyless.SignOptions{FulcioURL: srv.URL, RekorURL: srv.URL, IDToken: tok, Timeout: 5 * time.Second})
	if err == nil || hits == 0 {
		t.Fatalf("sign against a failing Fulcio: %v (%d requests)", err, hits)
	}
	if strings.Contains(err.Error(), tok) || strings.Contains(err.Error(), "c2lnbmF0dXJlLXNlY3JldA") {
		t.Errorf("the error shows the identity token: %v", err)
	}
}
