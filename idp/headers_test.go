package idp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/finding"
)

// TestEmbeddedKeyHeadersRefused proves that a token which carries its own
// key (an embedded JWK or an x5c certificate chain) is refused, even when
// it is signed by the issuer's real key: etdi never takes a key from the
// token it is checking. The attacker variant signs with its own key and
// embeds the matching public key, which a verifier that honoured the
// header would accept.
func TestEmbeddedKeyHeadersRefused(t *testing.T) {
	s := newIDP(t, keysAll...)
	st, payload := statement(t)
	cfg := config(s)
	genuine := keysAll[0] // ES256, kid "ec256", in the issuer's JWKS

	attacker, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	attackerJWK := jwk(testKey{"ec256", "ES256", attacker})
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "acme-ci"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, attacker.Public(), attacker)
	if err != nil {
		t.Fatal(err)
	}
	x5c := []any{base64.StdEncoding.EncodeToString(der)}

	for _, tc := range []struct {
		name   string
		header string
		value  any
	}{
		{"jwk", "jwk", attackerJWK},
		{"x5c", "x5c", x5c},
	} {
		t.Run(tc.name+" on a genuinely signed token", func(t *testing.T) {
			tok := signToken(t, genuine, claims(s.URL, st, payload), map[string]any{tc.header: tc.value})
			expectErr(t, newVerifier(), tok, cfg, st, payload, finding.SignatureInvalid, fmt.Sprintf("%q header", tc.header))
		})
		t.Run(tc.name+" naming the attacker's own key", func(t *testing.T) {
			tok := signToken(t, testKey{"ec256", "ES256", attacker}, claims(s.URL, st, payload), map[string]any{tc.header: tc.value})
			expectErr(t, newVerifier(), tok, cfg, st, payload, finding.SignatureInvalid, fmt.Sprintf("%q header", tc.header))
		})
	}
}
