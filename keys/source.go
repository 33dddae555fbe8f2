package keys

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sigstore/sigstore/pkg/signature"
)

// PassFunc returns the password of an encrypted private key.
type PassFunc func() ([]byte, error)

// MaxKeyFileSize bounds key files and key environment variables.
const MaxKeyFileSize = 64 << 10

// LoadSigner opens the signing key named by ref (docs/signing.md#keys):
//
//   - a path to an encrypted private key file (etdi's or cosign's format);
//   - env://NAME, the same PEM text held in environment variable NAME;
//   - a KMS URI (awskms://, gcpkms://, azurekms://, hashivault://, or any
//     scheme served by a sigstore-kms-<scheme> plugin), when etdi is built
//     with the "kms" build tag.
//
// It returns the signer and its public key, whose algorithm has been
// checked.
func LoadSigner(ctx context.Context, ref string, pass PassFunc) (signature.Signer, crypto.PublicKey, error) {
	var pemBytes []byte
	switch {
	case strings.HasPrefix(ref, "env://"):
		name := strings.TrimPrefix(ref, "env://")
		if name == "" {
			return nil, nil, errors.New("env:// key reference names no variable")
		}
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			return nil, nil, fmt.Errorf("environment variable %s is not set", name)
		}
		if len(v) > MaxKeyFileSize {
			return nil, nil, fmt.Errorf("environment variable %s is larger than %d bytes", name, MaxKeyFileSize)
		}
		pemBytes = []byte(v)
	case strings.Contains(ref, "://"):
		return kmsSigner(ctx, ref)
	default:
		b, err := readLimited(ref)
		if err != nil {
			return nil, nil, err
		}
		pemBytes = b
	}
	if pass == nil {
		return nil, nil, errors.New("no password source for the encrypted private key")
	}
	pw, err := pass()
	if err != nil {
		return nil, nil, err
	}
	priv, err := DecryptPrivateKey(pemBytes, pw)
	if err != nil {
		return nil, nil, err
	}
	s, err := Signer(priv)
	if err != nil {
		return nil, nil, err
	}
	return s, priv.Public(), nil
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxKeyFileSize {
		return nil, fmt.Errorf("%s: larger than %d bytes, not a key file", path, MaxKeyFileSize)
	}
	b := make([]byte, fi.Size())
	if _, err := f.Read(b); err != nil && fi.Size() > 0 {
		return nil, err
	}
	return b, nil
}

// ReadPublicKeyFile reads and checks a PEM public key file.
func ReadPublicKeyFile(path string) (crypto.PublicKey, error) {
	b, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	pub, err := ParsePublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pub, nil
}
