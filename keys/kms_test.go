package keys

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/signature"
)

// TestRegisterKMS signs through a registered resolver holding a P-384 key:
// LoadSigner asks again for the key's own hash (SHA-384), and the signature
// verifies under etdi's rules for the key. Without a resolver a KMS
// reference is refused with the build hint; a resolver's error and a key of
// a refused curve fail closed.
func TestRegisterKMS(t *testing.T) {
	t.Cleanup(func() { RegisterKMS(nil) })
	RegisterKMS(nil)
	if KMSEnabled() {
		t.Fatal("KMSEnabled with no resolver")
	}
	if _, _, err := LoadSigner(context.Background(), "awskms:///alias/etdi", nil); !errors.Is(err, errNoKMS) || !strings.Contains(err.Error(), "-tags kms") {
		t.Fatalf("no resolver: %v", err)
	}

	priv, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	var asked []string
	RegisterKMS(func(_ context.Context, ref string, h crypto.Hash) (signature.SignerVerifier, error) {
		asked = append(asked, ref+" "+h.String())
		if ref == "testkms://broken" {
			return nil, errors.New("key not found")
		}
		if ref == "testkms://p224" {
			k, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
			return signature.LoadECDSASignerVerifier(k, h)
		}
		return signature.LoadECDSASignerVerifier(priv, h)
	})
	if !KMSEnabled() {
		t.Fatal("KMSEnabled false after RegisterKMS")
	}
	s, pub, err := LoadSigner(context.Background(), "testkms://projects/p/keys/k", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !pub.(*ecdsa.PublicKey).Equal(priv.Public()) {
		t.Fatal("wrong public key")
	}
	if got := strings.Join(asked, ","); got != "testkms://projects/p/keys/k SHA-256,testkms://projects/p/keys/k SHA-384" {
		t.Fatalf("resolver calls: %s", got)
	}
	msg := []byte("statement")
	sig, err := s.SignMessage(bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Verifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(msg)); err != nil {
		t.Fatalf("KMS signature does not verify: %v", err)
	}
	if _, _, err := LoadSigner(context.Background(), "testkms://broken", nil); err == nil || !strings.Contains(err.Error(), "key not found") {
		t.Fatalf("resolver error: %v", err)
	}
	if _, _, err := LoadSigner(context.Background(), "testkms://p224", nil); err == nil || !strings.Contains(err.Error(), "not accepted") {
		t.Fatalf("P-224 KMS key accepted: %v", err)
	}
}
