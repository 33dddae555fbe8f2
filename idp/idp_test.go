package idp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
	"github.com/golang-jwt/jwt/v5"
)

type testKey struct {
	kid  string
	alg  string
	priv crypto.Signer
}

func jwk(k testKey) map[string]any {
	m := map[string]any{"kid": k.kid, "alg": k.alg, "use": "sig"}
	enc := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	switch p := k.priv.Public().(type) {
	case *rsa.PublicKey:
		m["kty"], m["n"], m["e"] = "RSA", enc(p.N.Bytes()), enc(big.NewInt(int64(p.E)).Bytes())
	case *ecdsa.PublicKey:
		size := (p.Curve.Params().BitSize + 7) / 8
		b, _ := p.Bytes()
		m["kty"], m["crv"], m["x"], m["y"] = "EC", p.Curve.Params().Name, enc(b[1:1+size]), enc(b[1+size:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", enc(p)
	}
	return m
}

func jwksOf(keys ...testKey) []byte {
	var list []any
	for _, k := range keys {
		list = append(list, jwk(k))
	}
	b, _ := json.Marshal(map[string]any{"keys": list})
	return b
}

// idpServer serves discovery, JWKS and introspection on 127.0.0.1.
type idpServer struct {
	*httptest.Server
	jwks         []byte
	cacheControl string
	fetches      atomic.Int32
	down         atomic.Bool
	active       atomic.Bool
	inStatus     int
}

// newIDPBench returns a configuration served by a fresh test IdP.
func newIDPBench(b *testing.B, k testKey) *trust.IDP {
	s := newIDP(b, k)
	return config(s)
}

func newIDP(t testing.TB, keys ...testKey) *idpServer {
	s := &idpServer{jwks: jwksOf(keys...), cacheControl: "max-age=600", inStatus: 200}
	s.active.Store(true)
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		if s.down.Load() {
			http.Error(w, "down", 503)
			return
		}
		fmt.Fprintf(w, `{"issuer":%q,"jwks_uri":%q,"token_endpoint":%q,"introspection_endpoint":%q}`, s.URL, s.URL+"/jwks", s.URL+"/token", s.URL+"/introspect")
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		if s.down.Load() {
			http.Error(w, "down", 503)
			return
		}
		s.fetches.Add(1)
		w.Header().Set("Cache-Control", s.cacheControl)
		w.Write(s.jwks)
	})
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "verifier" || p != "introspection-secret" {
			http.Error(w, "unauthorized", 401)
			return
		}
		if s.inStatus != 200 {
			http.Error(w, "broken", s.inStatus)
			return
		}
		fmt.Fprintf(w, `{"active":%v}`, s.active.Load())
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

var (
	ecKey, _    = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ec384Key, _ = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, _   = rsa.GenerateKey(rand.Reader, 2048)
	_, edKey, _ = ed25519.GenerateKey(rand.Reader)
	keysAll     = []testKey{
		{"ec256", "ES256", ecKey}, {"ec384", "ES384", ec384Key}, {"rsa", "RS256", rsaKey}, {"rsa-pss", "PS256", rsaKey}, {"ed", "EdDSA", edKey},
	}
)

const manifest = `{"provider":{"id":"acme"},"server":{"name":"weather"},"tools":[
 {"version":"1.0.0","permissions":[{"scope":"net:fetch"},{"scope":"geo:read"}],"definition":{"name":"get_weather","description":"Weather."}}]}`

func statement(t testing.TB) (*etdi.Statement, []byte) {
	m, err := etdi.ParseManifest([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	st, err := etdi.NewStatement(m, time.Unix(1_800_000_000, 0), time.Unix(1_900_000_000, 0), 1)
	if err != nil {
		t.Fatal(err)
	}
	return st, st.Payload()
}

var now = time.Unix(1_850_000_000, 0)

func claims(iss string, st *etdi.Statement, payload []byte) jwt.MapClaims {
	return jwt.MapClaims{
		"iss": iss, "aud": "urn:etdi", "sub": "acme-ci", "jti": "t-1",
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"scope":                 "net:fetch geo:read",
		"authorization_details": []any{DetailFor(st, payload)},
	}
}

func signToken(t testing.TB, k testKey, c jwt.MapClaims, header map[string]any) string {
	var m jwt.SigningMethod
	switch k.alg {
	case "ES256":
		m = jwt.SigningMethodES256
	case "ES384":
		m = jwt.SigningMethodES384
	case "RS256":
		m = jwt.SigningMethodRS256
	case "PS256":
		m = jwt.SigningMethodPS256
	case "EdDSA":
		m = jwt.SigningMethodEdDSA
	}
	tok := jwt.NewWithClaims(m, c)
	tok.Header["kid"] = k.kid
	for h, v := range header {
		tok.Header[h] = v
	}
	s, err := tok.SignedString(k.priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func config(s *idpServer) *trust.IDP {
	return &trust.IDP{Issuer: s.URL, Audience: "urn:etdi", Subjects: []string{"acme-ci"}}
}

func newVerifier() *Verifier {
	return &Verifier{Cache: &MemCache{}, Now: func() time.Time { return now },
		Getenv: func(k string) string {
			if k == "INTROSPECTION_SECRET" {
				return "introspection-secret"
			}
			return ""
		}}
}

// expectErr checks that the token is refused with the given finding kind
// and a message containing want.
func expectErr(t *testing.T, v *Verifier, token string, cfg *trust.IDP, st *etdi.Statement, payload []byte, kind finding.Kind, want string) *verify.TokenError {
	t.Helper()
	id, err := v.VerifyToken(context.Background(), token, cfg, payload, st)
	if err == nil {
		t.Fatalf("token accepted: %+v", id)
	}
	var te *verify.TokenError
	if !errors.As(err, &te) {
		t.Fatalf("error %T: %v", err, err)
	}
	if te.Kind != kind || !strings.Contains(te.Msg, want) {
		t.Fatalf("error %s %q, want %s containing %q", te.Kind, te.Msg, kind, want)
	}
	return te
}

func TestValidTokensEveryAlgorithm(t *testing.T) {
	s := newIDP(t, keysAll...)
	st, payload := statement(t)
	for _, k := range keysAll {
		t.Run(k.alg, func(t *testing.T) {
			id, err := newVerifier().VerifyToken(context.Background(), signToken(t, k, claims(s.URL, st, payload), nil), config(s), payload, st)
			if err != nil {
				t.Fatal(err)
			}
			if id.Subject != "acme-ci" || id.Issuer != s.URL || id.JTI != "t-1" {
				t.Fatalf("identity %+v", id)
			}
		})
	}
}

func TestAttacks(t *testing.T) {
	s := newIDP(t, keysAll...)
	st, payload := statement(t)
	cfg := config(s)
	good := func() jwt.MapClaims { return claims(s.URL, st, payload) }
	ec := keysAll[0]

	t.Run("alg none", func(t *testing.T) {
		tok := jwt.NewWithClaims(jwt.SigningMethodNone, good())
		str, _ := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
		expectErr(t, newVerifier(), str, cfg, st, payload, finding.SignatureInvalid, "signing method none is invalid")
	})
	t.Run("HS256 with the RSA public key as secret", func(t *testing.T) {
		der, _ := x509.MarshalPKIXPublicKey(rsaKey.Public())
		secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, good())
		tok.Header["kid"] = "rsa"
		str, _ := tok.SignedString(secret)
		expectErr(t, newVerifier(), str, cfg, st, payload, finding.SignatureInvalid, "signing method HS256 is invalid")
	})
	t.Run("unknown kid refreshes once", func(t *testing.T) {
		clock := now
		v := newVerifier()
		v.Now = func() time.Time { return clock }
		if _, err := v.VerifyToken(context.Background(), signToken(t, ec, good(), nil), cfg, payload, st); err != nil {
			t.Fatal(err)
		}
		// Right after a fetch an unknown kid does not refetch; later, once.
		clock = now.Add(refreshBackoff + time.Second)
		before := s.fetches.Load()
		stranger, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tok := signToken(t, testKey{"unknown", "ES256", stranger}, good(), nil)
		expectErr(t, v, tok, cfg, st, payload, finding.SignatureInvalid, `kid "unknown" is not among the issuer's keys`)
		expectErr(t, v, tok, cfg, st, payload, finding.SignatureInvalid, `kid "unknown" is not among the issuer's keys`)
		if got := s.fetches.Load() - before; got != 1 {
			t.Fatalf("%d JWKS fetches for an unknown kid, want exactly 1 (rate-limited refresh)", got)
		}
	})
	t.Run("kid pointing at an attacker's jku", func(t *testing.T) {
		attacker, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write(jwksOf(testKey{"evil", "ES256", attacker}))
		}))
		defer evil.Close()
		for _, h := range []string{"jku", "x5u"} {
			tok := signToken(t, testKey{"evil", "ES256", attacker}, good(), map[string]any{h: evil.URL})
			expectErr(t, newVerifier(), tok, cfg, st, payload, finding.SignatureInvalid, fmt.Sprintf("%q header", h))
		}
	})
	t.Run("expired", func(t *testing.T) {
		c := good()
		c["exp"] = now.Add(-2 * Leeway).Unix()
		expectErr(t, newVerifier(), signToken(t, ec, c, nil), cfg, st, payload, finding.Expired, "expired")
	})
	t.Run("expired within leeway is accepted", func(t *testing.T) {
		c := good()
		c["exp"] = now.Add(-Leeway / 2).Unix()
		if _, err := newVerifier().VerifyToken(context.Background(), signToken(t, ec, c, nil), cfg, payload, st); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("missing exp", func(t *testing.T) {
		c := good()
		delete(c, "exp")
		expectErr(t, newVerifier(), signToken(t, ec, c, nil), cfg, st, payload, finding.SignatureInvalid, "exp claim is required")
	})
	t.Run("not yet valid", func(t *testing.T) {
		c := good()
		c["nbf"] = now.Add(2 * Leeway).Unix()
		expectErr(t, newVerifier(), signToken(t, ec, c, nil), cfg, st, payload, finding.Expired, "not valid yet")
	})
	t.Run("wrong issuer", func(t *testing.T) {
		c := good()
		c["iss"] = "https://evil.example"
		expectErr(t, newVerifier(), signToken(t, ec, c, nil), cfg, st, payload, finding.SignatureInvalid, "invalid issuer")
	})
	t.Run("wrong audience", func(t *testing.T) {
		c := good()
		c["aud"] = "urn:other"
		expectErr(t, newVerifier(), signToken(t, ec, c, nil), cfg, st, payload, finding.SignatureInvalid, "invalid audience")
	})
	t.Run("missing binding", func(t *testing.T) {
		c := good()
		delete(c, "authorization_details")
		expectErr(t, newVerifier(), signToken(t, ec, c, nil), cfg, st, payload, finding.SignatureInvalid, "no authorization_details")
	})
	t.Run("binding to another payload", func(t *testing.T) {
		c := good()
		c["authorization_details"] = []any{DetailFor(st, []byte("another payload"))}
		expectErr(t, newVerifier(), signToken(t, ec, c, nil), cfg, st, payload, finding.SignatureInvalid, "bound to another statement")
	})
	t.Run("binding names another provider", func(t *testing.T) {
		c := good()
		d := DetailFor(st, payload)
		d.Provider = "globex"
		c["authorization_details"] = []any{d}
		expectErr(t, newVerifier(), signToken(t, ec, c, nil), cfg, st, payload, finding.SignatureInvalid, "names provider globex")
	})
	t.Run("scopes narrower than the permissions", func(t *testing.T) {
		c := good()
		c["scope"] = "net:fetch"
		expectErr(t, newVerifier(), signToken(t, ec, c, nil), cfg, st, payload, finding.SignatureInvalid, "does not grant scope(s) geo:read")
	})
	t.Run("scp array covers the scopes", func(t *testing.T) {
		c := good()
		delete(c, "scope")
		c["scp"] = []any{"net:fetch", "geo:read"}
		if _, err := newVerifier().VerifyToken(context.Background(), signToken(t, ec, c, nil), cfg, payload, st); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("subject not trusted", func(t *testing.T) {
		c := good()
		c["sub"] = "globex-ci"
		te := expectErr(t, newVerifier(), signToken(t, ec, c, nil), cfg, st, payload, finding.SignatureInvalid, `subject "globex-ci"`)
		if !te.UntrustedSubject || te.Subject != "globex-ci" {
			t.Fatalf("untrusted subject not marked: %+v", te)
		}
	})
	t.Run("deny-lists", func(t *testing.T) {
		c2 := *cfg
		c2.DenyJTI = []string{"t-1"}
		expectErr(t, newVerifier(), signToken(t, ec, good(), nil), &c2, st, payload, finding.Revoked, "deny-list")
		c3 := *cfg
		c3.DenySubjects = []string{"acme-ci"}
		expectErr(t, newVerifier(), signToken(t, ec, good(), nil), &c3, st, payload, finding.Revoked, "deny-list")
	})
	t.Run("signature of another key with a known kid", func(t *testing.T) {
		other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		expectErr(t, newVerifier(), signToken(t, testKey{"ec256", "ES256", other}, good(), nil), cfg, st, payload, finding.SignatureInvalid, "signature is invalid")
	})
	t.Run("tampered claims", func(t *testing.T) {
		tok := signToken(t, ec, good(), nil)
		parts := strings.Split(tok, ".")
		c := good()
		c["scope"] = "net:fetch geo:read fs:write"
		b, _ := json.Marshal(c)
		parts[1] = base64.RawURLEncoding.EncodeToString(b)
		expectErr(t, newVerifier(), strings.Join(parts, "."), cfg, st, payload, finding.SignatureInvalid, "signature is invalid")
	})
}

func TestIntrospection(t *testing.T) {
	s := newIDP(t, keysAll...)
	st, payload := statement(t)
	cfg := config(s)
	cfg.Introspection = &trust.Introspection{Endpoint: s.URL + "/introspect", ClientID: "verifier", ClientSecretEnv: "INTROSPECTION_SECRET"}
	tok := signToken(t, keysAll[0], claims(s.URL, st, payload), nil)
	if _, err := newVerifier().VerifyToken(context.Background(), tok, cfg, payload, st); err != nil {
		t.Fatal(err)
	}
	s.active.Store(false)
	expectErr(t, newVerifier(), tok, cfg, st, payload, finding.Revoked, "inactive")
	s.active.Store(true)
	s.inStatus = 500
	expectErr(t, newVerifier(), tok, cfg, st, payload, finding.SignatureInvalid, "introspection failed")
}

func TestJWKSCacheAndOutage(t *testing.T) {
	s := newIDP(t, keysAll...)
	st, payload := statement(t)
	cfg := config(s)
	tok := signToken(t, keysAll[0], claims(s.URL, st, payload), nil)
	cache := &MemCache{}
	clock := now
	v := &Verifier{Cache: cache, Now: func() time.Time { return clock }}
	if _, err := v.VerifyToken(context.Background(), tok, cfg, payload, st); err != nil {
		t.Fatal(err)
	}
	fetches := s.fetches.Load()
	// Within max-age the cached keys are used, even with the endpoint down.
	s.down.Store(true)
	if _, err := v.VerifyToken(context.Background(), tok, cfg, payload, st); err != nil {
		t.Fatalf("cached keys not used while the endpoint is down: %v", err)
	}
	if s.fetches.Load() != fetches {
		t.Fatal("fetched within max-age")
	}
	// After max-age, with the endpoint down: fail closed.
	clock = now.Add(11 * time.Minute)
	c := claims(s.URL, st, payload)
	c["iat"], c["exp"] = clock.Unix(), clock.Add(5*time.Minute).Unix()
	tok2 := signToken(t, keysAll[0], c, nil)
	expectErr(t, v, tok2, cfg, st, payload, finding.SignatureInvalid, "cannot get the issuer's keys")
	// A fresh verifier without cache fails closed too.
	expectErr(t, &Verifier{Now: func() time.Time { return clock }}, tok2, cfg, st, payload, finding.SignatureInvalid, "cannot get the issuer's keys")
	// no-store: nothing is cached, every verification fetches.
	s.down.Store(false)
	s.cacheControl = "no-store"
	v2 := &Verifier{Cache: &MemCache{}, Now: func() time.Time { return clock }}
	before := s.fetches.Load()
	for i := 0; i < 3; i++ {
		if _, err := v2.VerifyToken(context.Background(), tok2, cfg, payload, st); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.fetches.Load() - before; got != 3 {
		t.Fatalf("no-store: %d fetches for 3 verifications", got)
	}
}

func TestPinnedJWKSOffline(t *testing.T) {
	st, payload := statement(t)
	cfg := &trust.IDP{Issuer: "https://idp.example.com", Audience: "urn:etdi", Subjects: []string{"acme-ci"}, JWKS: jwksOf(keysAll...)}
	for _, k := range keysAll {
		tok := signToken(t, k, claims(cfg.Issuer, st, payload), nil)
		// No HTTP client can reach anything: the verifier must not try.
		v := &Verifier{HTTP: &http.Client{Transport: failTransport{}}, Now: func() time.Time { return now }}
		if _, err := v.VerifyToken(context.Background(), tok, cfg, payload, st); err != nil {
			t.Fatalf("%s with a pinned JWKS: %v", k.alg, err)
		}
	}
}

type failTransport struct{}

func (failTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("network access in an offline test")
}

func TestDiscoveryChecks(t *testing.T) {
	mux := http.NewServeMux()
	var doc string
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, doc) })
	s := httptest.NewServer(mux)
	defer s.Close()
	for _, tc := range []struct{ doc, want string }{
		{fmt.Sprintf(`{"issuer":"https://other.example","jwks_uri":"%s/jwks"}`, s.URL), "is for issuer"},
		{fmt.Sprintf(`{"issuer":%q,"jwks_uri":"http://evil.example/jwks"}`, s.URL), "must use https"},
		{fmt.Sprintf(`{"issuer":%q,"issuer":"x"}`, s.URL), "duplicate member name"},
	} {
		doc = tc.doc
		if _, err := Discover(context.Background(), nil, s.URL); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("discovery %s: %v, want %q", tc.doc, err, tc.want)
		}
	}
	if err := trust.CheckIssuer("http://idp.example.com"); err == nil {
		t.Error("plain http issuer off loopback accepted")
	}
}

func TestParseJWKS(t *testing.T) {
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if _, err := ParseJWKS(jwksOf(testKey{"s", "RS256", small}, testKey{"p", "ES512", p521})); err == nil {
		t.Fatal("a set of only refused keys was accepted")
	}
	priv := jwk(keysAll[0])
	priv["d"] = "AAAA"
	b, _ := json.Marshal(map[string]any{"keys": []any{priv}})
	if _, err := ParseJWKS(b); err == nil || !strings.Contains(err.Error(), "private") {
		t.Fatalf("private key material: %v", err)
	}
	dup := jwksOf(keysAll[0], keysAll[0])
	if _, err := ParseJWKS(dup); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("duplicate kid: %v", err)
	}
}
