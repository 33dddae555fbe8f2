package idp

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/trust"
)

// FuzzParseJWKS: a key set that parses resolves every kid it lists.
func FuzzParseJWKS(f *testing.F) {
	f.Add(jwksOf(keysAll...))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ks, err := ParseJWKS(data)
		if err != nil {
			return
		}
		for _, kid := range ks.order {
			if _, ok := ks.Key(kid); !ok {
				t.Fatalf("kid %q listed but not found", kid)
			}
		}
	})
}

// FuzzVerifyToken mutates a valid token: only the untouched signing input
// (header and claims) may ever verify.
func FuzzVerifyToken(f *testing.F) {
	st, payload := statement(f)
	cfg := &trust.IDP{Issuer: "https://idp.example.com", Audience: "urn:etdi", Subjects: []string{"acme-ci"}, JWKS: jwksOf(keysAll...)}
	var originals []string
	for _, k := range keysAll {
		tok := signToken(f, k, claims(cfg.Issuer, st, payload), nil)
		originals = append(originals, tok)
		f.Add(tok)
	}
	signingInput := func(tok string) string {
		if i := strings.LastIndexByte(tok, '.'); i >= 0 {
			return tok[:i]
		}
		return tok
	}
	v := &Verifier{Now: func() time.Time { return now }}
	f.Fuzz(func(t *testing.T, token string) {
		if _, err := v.VerifyToken(context.Background(), token, cfg, payload, st); err != nil {
			return
		}
		for _, o := range originals {
			if signingInput(o) == signingInput(token) {
				return
			}
		}
		t.Fatalf("a token that was never signed verified: %q", token)
	})
}
