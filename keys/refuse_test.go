package keys

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
)

// A public key file is one PEM block of type PUBLIC KEY and nothing after
// it; an Ed25519 key of the wrong length is not a key.
func TestPublicKeyFileShape(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(priv.Public())
	good := pem.EncodeToMemory(&pem.Block{Type: PublicKeyPEMType, Bytes: der})
	if _, err := ParsePublicKey(good); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		pem  []byte
		want string
	}{
		"another PEM type": {pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), "is not"},
		"trailing data":    {append(append([]byte{}, good...), "ssh-ed25519 AAAA\n"...), "after the public key"},
		"second block":     {append(append([]byte{}, good...), good...), "after the public key"},
	} {
		if _, err := ParsePublicKey(c.pem); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := CheckPublicKey(ed25519.PublicKey(make([]byte, 31))); err == nil {
		t.Error("a 31-byte Ed25519 key was accepted")
	}
}

// An encrypted key file holding a key of a refused algorithm is refused
// when it is decrypted, before anything is signed with it.
func TestDecryptRefusesAlgorithm(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	sealed, err := encrypted.Encrypt(der, pw)
	if err != nil {
		t.Fatal(err)
	}
	file := pem.EncodeToMemory(&pem.Block{Type: PrivateKeyPEMType, Bytes: sealed})
	if _, err := DecryptPrivateKey(file, pw); err == nil || !strings.Contains(err.Error(), "P-224") {
		t.Fatalf("P-224 key: %v", err)
	}
}

// RSA-PSS signatures use a salt as long as the hash (SPEC.md §7), which
// is what other verifiers assume.
func TestRSAPSSSaltLength(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Signer(k)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("etdi")
	sig, err := s.SignMessage(strings.NewReader(string(msg)))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(msg)
	if err := rsa.VerifyPSS(&k.PublicKey, crypto.SHA256, h[:], sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}); err != nil {
		t.Fatalf("salt length: %v", err)
	}
}

// A key file or key variable larger than MaxKeyFileSize is refused
// unread, and an encrypted key without a password source is refused.
func TestLoadSignerBounds(t *testing.T) {
	ctx := context.Background()
	big := filepath.Join(t.TempDir(), "big.key")
	os.WriteFile(big, []byte(strings.Repeat("A", MaxKeyFileSize+1)), 0o600)
	if _, _, err := LoadSigner(ctx, big, func() ([]byte, error) { return pw, nil }); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("large file: %v", err)
	}
	t.Setenv("ETDI_TEST_BIG_KEY", strings.Repeat("A", MaxKeyFileSize+1))
	if _, _, err := LoadSigner(ctx, "env://ETDI_TEST_BIG_KEY", func() ([]byte, error) { return pw, nil }); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("large variable: %v", err)
	}
	if _, _, err := LoadSigner(ctx, "../testdata/keys/acme-ed25519.key", nil); err == nil || !strings.Contains(err.Error(), "no password source") {
		t.Errorf("no password source: %v", err)
	}
}
