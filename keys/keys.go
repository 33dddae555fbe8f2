// Package keys handles provider key pairs: generation, the encrypted
// private key file format (the cosign/sigstore one), public key files, key
// ids, the fixed set of signature algorithms etdi accepts (SPEC.md §7), and
// the references that name a signing key: a key file, env://NAME or a KMS
// URI ([LoadSigner], [RegisterKMS]).
//
// Accepted: Ed25519 (default), ECDSA P-256 with SHA-256, ECDSA P-384 with
// SHA-384, RSA-PSS with SHA-256 and keys of at least 2048 bits. Everything
// else is refused, on signing and on verification.
package keys

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// Algorithm names accepted by [Generate].
const (
	Ed25519   = "ed25519"
	ECDSAP256 = "ecdsa-p256"
	ECDSAP384 = "ecdsa-p384"
	RSAPSS    = "rsa-pss-3072"
	RSAPSS4K  = "rsa-pss-4096"
)

// Algorithms lists the names [Generate] accepts, default first.
var Algorithms = []string{Ed25519, ECDSAP256, ECDSAP384, RSAPSS, RSAPSS4K}

// PEM block types.
const (
	// PrivateKeyPEMType is written by Generate; it is cosign's current type.
	PrivateKeyPEMType = "ENCRYPTED SIGSTORE PRIVATE KEY"
	// legacyCosignPEMType is accepted on read (older cosign key files).
	legacyCosignPEMType = "ENCRYPTED COSIGN PRIVATE KEY"
	PublicKeyPEMType    = "PUBLIC KEY"
)

// MinRSABits is the smallest RSA modulus accepted.
const MinRSABits = 2048

// ErrUnencrypted is returned for a private key that is not encrypted.
var ErrUnencrypted = errors.New("private key is not encrypted; etdi only reads encrypted key files (etdi key generate, or cosign generate-key-pair)")

// ErrWrongPassword is returned when a private key does not decrypt.
var ErrWrongPassword = errors.New("cannot decrypt private key: wrong password or damaged file")

// Generate creates a new private key of the named algorithm.
func Generate(alg string) (crypto.Signer, error) {
	switch alg {
	case Ed25519, "":
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		return priv, err
	case ECDSAP256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case ECDSAP384:
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case RSAPSS:
		return rsa.GenerateKey(rand.Reader, 3072)
	case RSAPSS4K:
		return rsa.GenerateKey(rand.Reader, 4096)
	}
	return nil, fmt.Errorf("unknown algorithm %q (want one of %s)", alg, strings.Join(Algorithms, ", "))
}

// EncryptPrivateKey returns the private key as an encrypted PEM block of
// type [PrivateKeyPEMType]: PKCS #8 DER sealed with NaCl secretbox under a
// scrypt-derived key (the cosign key file format).
func EncryptPrivateKey(priv crypto.Signer, password []byte) ([]byte, error) {
	if len(password) == 0 {
		return nil, errors.New("refusing to write a private key with an empty password")
	}
	if err := CheckPublicKey(priv.Public()); err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	sealed, err := encrypted.Encrypt(der, password)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: PrivateKeyPEMType, Bytes: sealed}), nil
}

// DecryptPrivateKey reads an encrypted private key PEM (etdi's or cosign's)
// and returns the key. Unencrypted keys are refused.
func DecryptPrivateKey(pemBytes, password []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("no PEM block found in private key")
	}
	switch block.Type {
	case PrivateKeyPEMType, legacyCosignPEMType:
	case "PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY", "OPENSSH PRIVATE KEY":
		return nil, ErrUnencrypted
	default:
		return nil, fmt.Errorf("unsupported private key PEM type %q", block.Type)
	}
	der, err := encrypted.Decrypt(block.Bytes, password)
	if err != nil {
		if strings.Contains(err.Error(), "decryption failed") {
			return nil, ErrWrongPassword
		}
		return nil, fmt.Errorf("cannot decrypt private key: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("decrypted private key is not PKCS #8: %w", err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", k)
	}
	if err := CheckPublicKey(s.Public()); err != nil {
		return nil, err
	}
	return s, nil
}

// MarshalPublicKey returns the PEM ("PUBLIC KEY", PKIX) form of pub.
func MarshalPublicKey(pub crypto.PublicKey) ([]byte, error) {
	return cryptoutils.MarshalPublicKeyToPEM(pub)
}

// ParsePublicKey reads a PEM public key and checks that its algorithm is
// accepted.
func ParsePublicKey(pemBytes []byte) (crypto.PublicKey, error) {
	block, rest := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("no PEM block found in public key")
	}
	if block.Type != PublicKeyPEMType {
		return nil, fmt.Errorf("PEM type %q is not %q", block.Type, PublicKeyPEMType)
	}
	if len(strings.TrimSpace(string(rest))) != 0 {
		return nil, errors.New("unexpected data after the public key PEM block")
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("invalid public key: %w", err)
	}
	if err := CheckPublicKey(pub); err != nil {
		return nil, err
	}
	return pub, nil
}

// CheckPublicKey reports whether pub uses an accepted algorithm.
func CheckPublicKey(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return errors.New("invalid Ed25519 public key")
		}
		return nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384():
			return nil
		}
		return fmt.Errorf("ECDSA curve %s is not accepted (P-256 or P-384)", k.Curve.Params().Name)
	case *rsa.PublicKey:
		if k.N.BitLen() < MinRSABits {
			return fmt.Errorf("RSA key of %d bits is too small (at least %d)", k.N.BitLen(), MinRSABits)
		}
		return nil
	}
	return fmt.Errorf("key type %T is not accepted (Ed25519, ECDSA P-256/P-384, RSA-PSS)", pub)
}

// Algorithm names the signature algorithm used with pub, e.g. "ecdsa-p256-sha256".
func Algorithm(pub crypto.PublicKey) string {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return "ed25519"
	case *ecdsa.PublicKey:
		if k.Curve == elliptic.P384() {
			return "ecdsa-p384-sha384"
		}
		return "ecdsa-p256-sha256"
	case *rsa.PublicKey:
		return fmt.Sprintf("rsa-pss-%d-sha256", k.N.BitLen())
	}
	return "unknown"
}

// ID returns the key id of pub: "sha256:" and the hex SHA-256 of its PKIX
// DER encoding. It is how etdi names keys everywhere.
func ID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// ShortID abbreviates a key id for display: "sha256:" and 16 hex digits.
func ShortID(id string) string {
	if len(id) > len("sha256:")+16 {
		return id[:len("sha256:")+16]
	}
	return id
}

func pssOptions() *rsa.PSSOptions {
	return &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: crypto.SHA256}
}

// HashFor returns the hash function used with pub (SHA-384 for P-384 keys,
// SHA-256 otherwise; Ed25519 signs the message itself).
func HashFor(pub crypto.PublicKey) crypto.Hash {
	if k, ok := pub.(*ecdsa.PublicKey); ok && k.Curve == elliptic.P384() {
		return crypto.SHA384
	}
	return crypto.SHA256
}

// Verifier returns a sigstore verifier for pub under etdi's algorithm rules.
func Verifier(pub crypto.PublicKey) (signature.Verifier, error) {
	if err := CheckPublicKey(pub); err != nil {
		return nil, err
	}
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return signature.LoadED25519Verifier(k)
	case *ecdsa.PublicKey:
		return signature.LoadECDSAVerifier(k, HashFor(k))
	case *rsa.PublicKey:
		return signature.LoadRSAPSSVerifier(k, crypto.SHA256, pssOptions())
	}
	return nil, fmt.Errorf("unsupported key type %T", pub)
}

// Signer returns a sigstore signer for priv under etdi's algorithm rules.
func Signer(priv crypto.Signer) (signature.Signer, error) {
	if err := CheckPublicKey(priv.Public()); err != nil {
		return nil, err
	}
	switch k := priv.(type) {
	case ed25519.PrivateKey:
		return signature.LoadED25519Signer(k)
	case *ecdsa.PrivateKey:
		return signature.LoadECDSASigner(k, HashFor(k.Public()))
	case *rsa.PrivateKey:
		return signature.LoadRSAPSSSigner(k, crypto.SHA256, pssOptions())
	}
	return nil, fmt.Errorf("unsupported private key type %T", priv)
}
