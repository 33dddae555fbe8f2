package keys

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

var pw = []byte("correct horse battery staple")

func TestGenerateEncryptSignVerify(t *testing.T) {
	for _, alg := range []string{Ed25519, ECDSAP256, ECDSAP384, RSAPSS} {
		t.Run(alg, func(t *testing.T) {
			priv, err := Generate(alg)
			if err != nil {
				t.Fatal(err)
			}
			pemBytes, err := EncryptPrivateKey(priv, pw)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(pemBytes, []byte("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----")) {
				t.Fatalf("unexpected PEM header: %.60s", pemBytes)
			}
			der, _ := x509.MarshalPKCS8PrivateKey(priv)
			if bytes.Contains(pemBytes, der[len(der)-16:]) {
				t.Fatal("private key material visible in the encrypted file")
			}
			back, err := DecryptPrivateKey(pemBytes, pw)
			if err != nil {
				t.Fatal(err)
			}
			id1, _ := ID(priv.Public())
			id2, _ := ID(back.Public())
			if id1 != id2 || !strings.HasPrefix(id1, "sha256:") || len(id1) != 71 {
				t.Fatalf("ids %s %s", id1, id2)
			}
			s, err := Signer(back)
			if err != nil {
				t.Fatal(err)
			}
			msg := []byte("DSSEv1 payload")
			sig, err := s.SignMessage(bytes.NewReader(msg))
			if err != nil {
				t.Fatal(err)
			}
			pubPEM, _ := MarshalPublicKey(priv.Public())
			pub, err := ParsePublicKey(pubPEM)
			if err != nil {
				t.Fatal(err)
			}
			v, err := Verifier(pub)
			if err != nil {
				t.Fatal(err)
			}
			if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(msg)); err != nil {
				t.Fatalf("verify: %v", err)
			}
			if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(append(msg, '!'))); err == nil {
				t.Fatal("signature verified for another message")
			}
		})
	}
}

func TestDecryptErrors(t *testing.T) {
	priv, _ := Generate(Ed25519)
	pemBytes, _ := EncryptPrivateKey(priv, pw)
	if _, err := DecryptPrivateKey(pemBytes, []byte("wrong")); !errors.Is(err, ErrWrongPassword) {
		t.Errorf("wrong password: %v", err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(priv)
	plain := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if _, err := DecryptPrivateKey(plain, pw); !errors.Is(err, ErrUnencrypted) {
		t.Errorf("unencrypted key: %v", err)
	}
	if _, err := DecryptPrivateKey([]byte("not pem"), pw); err == nil {
		t.Error("garbage accepted")
	}
	if _, err := EncryptPrivateKey(priv, nil); err == nil {
		t.Error("empty password accepted")
	}
	// A file asking for absurd scrypt work is refused, not computed.
	block, _ := pem.Decode(pemBytes)
	evil := bytes.Replace(block.Bytes, []byte(`"N":65536`), []byte(`"N":1073741824`), 1)
	if bytes.Equal(evil, block.Bytes) {
		t.Fatalf("scrypt parameters not found in %s", block.Bytes)
	}
	start := time.Now()
	_, err := DecryptPrivateKey(pem.EncodeToMemory(&pem.Block{Type: PrivateKeyPEMType, Bytes: evil}), pw)
	if err == nil {
		t.Fatal("key with N=2^30 accepted")
	}
	t.Logf("refused in %v: %v", time.Since(start), err)
}

// Cosign writes its key pairs with sigstore's cryptoutils; etdi must read
// them, with the current and the legacy PEM type.
func TestCosignKeyPair(t *testing.T) {
	privPEM, pubPEM, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc(pw))
	if err != nil {
		t.Fatal(err)
	}
	priv, err := DecryptPrivateKey(privPEM, pw)
	if err != nil {
		t.Fatalf("cosign key: %v", err)
	}
	pub, err := ParsePublicKey(pubPEM)
	if err != nil {
		t.Fatalf("cosign public key: %v", err)
	}
	a, _ := ID(priv.Public())
	b, _ := ID(pub)
	if a != b {
		t.Fatal("cosign key pair halves do not match")
	}
	block, _ := pem.Decode(privPEM)
	legacy := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED COSIGN PRIVATE KEY", Bytes: block.Bytes})
	if _, err := DecryptPrivateKey(legacy, pw); err != nil {
		t.Fatalf("legacy cosign key: %v", err)
	}
	// And a signature made by sigstore with the cosign key (ECDSA P-256,
	// SHA-256) verifies with etdi's verifier for the cosign public key.
	sv, err := signature.LoadSignerVerifierFromPEMFile(writeTemp(t, privPEM), crypto.SHA256, cryptoutils.StaticPasswordFunc(pw))
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := sv.SignMessage(bytes.NewReader([]byte("m")))
	v, _ := Verifier(pub)
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader([]byte("m"))); err != nil {
		t.Fatalf("cosign signature: %v", err)
	}
}

func writeTemp(t *testing.T, b []byte) string {
	p := t.TempDir() + "/k"
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRefusedAlgorithms(t *testing.T) {
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	for name, k := range map[string]crypto.Signer{"rsa-1024": small, "p-224": p224, "p-521": p521} {
		pub := k.Public()
		if err := CheckPublicKey(pub); err == nil {
			t.Errorf("%s accepted", name)
		}
		if _, err := Verifier(pub); err == nil {
			t.Errorf("%s verifier created", name)
		}
		pubPEM, _ := cryptoutils.MarshalPublicKeyToPEM(pub)
		if _, err := ParsePublicKey(pubPEM); err == nil {
			t.Errorf("%s public key parsed", name)
		}
	}
	if _, err := Generate("dsa"); err == nil {
		t.Error("unknown algorithm generated")
	}
}

// RSA keys sign with PSS only: a PKCS #1 v1.5 signature by the same key
// does not verify.
func TestRSAIsPSSOnly(t *testing.T) {
	priv, _ := rsa.GenerateKey(rand.Reader, 2048)
	v15, _ := signature.LoadRSAPKCS1v15Signer(priv, crypto.SHA256)
	sig, _ := v15.SignMessage(bytes.NewReader([]byte("m")))
	v, err := Verifier(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader([]byte("m"))); err == nil {
		t.Fatal("PKCS #1 v1.5 signature accepted")
	}
}

func TestLoadSigner(t *testing.T) {
	priv, _ := Generate(ECDSAP256)
	pemBytes, _ := EncryptPrivateKey(priv, pw)
	pass := func() ([]byte, error) { return pw, nil }
	path := writeTemp(t, pemBytes)
	for _, ref := range []string{path, "env://ETDI_TEST_KEY"} {
		t.Setenv("ETDI_TEST_KEY", string(pemBytes))
		s, pub, err := LoadSigner(context.Background(), ref, pass)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if s == nil || !pub.(*ecdsa.PublicKey).Equal(priv.Public()) {
			t.Fatalf("%s: wrong key", ref)
		}
	}
	if _, _, err := LoadSigner(context.Background(), "env://ETDI_UNSET_VAR", pass); err == nil || !strings.Contains(err.Error(), "not set") {
		t.Errorf("unset env: %v", err)
	}
	if _, _, err := LoadSigner(context.Background(), path, func() ([]byte, error) { return []byte("x"), nil }); !errors.Is(err, ErrWrongPassword) {
		t.Errorf("wrong password: %v", err)
	}
	if !KMSEnabled() {
		_, _, err := LoadSigner(context.Background(), "awskms:///alias/etdi", pass)
		if err == nil || !strings.Contains(err.Error(), "-tags kms") {
			t.Errorf("kms without the build tag: %v", err)
		}
	}
	if _, _, err := LoadSigner(context.Background(), t.TempDir()+"/missing.key", pass); err == nil {
		t.Error("missing file accepted")
	}
}
