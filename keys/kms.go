package keys

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/options"
)

// KMSResolver returns the signer of the KMS key named by ref, hashing with
// hash. sigstore's kms.Get, with the providers a program links in, is one.
type KMSResolver func(ctx context.Context, ref string, hash crypto.Hash) (signature.SignerVerifier, error)

var kmsMu sync.RWMutex
var kmsResolve KMSResolver

// RegisterKMS makes [LoadSigner] resolve KMS key references (scheme://...)
// with resolve. The library links no KMS provider itself, so that programs
// importing it do not link cloud SDKs: a program that signs with KMS keys
// registers a resolver once at start-up. The etdi command does so in builds
// with the "kms" build tag (go build -tags kms ./cmd/etdi), through
// sigstore's KMS registry with its AWS, GCP, Azure and HashiCorp Vault
// providers and sigstore-kms-<scheme> plugin programs on PATH.
// RegisterKMS(nil) removes the resolver.
func RegisterKMS(resolve KMSResolver) {
	kmsMu.Lock()
	defer kmsMu.Unlock()
	kmsResolve = resolve
}

// KMSEnabled reports whether a KMS resolver is registered.
func KMSEnabled() bool {
	kmsMu.RLock()
	defer kmsMu.RUnlock()
	return kmsResolve != nil
}

// errNoKMS is the error for a KMS reference in a program without a
// resolver; etdi built without the "kms" tag is one.
var errNoKMS = errors.New("this etdi was built without KMS support; rebuild with 'go build -tags kms ./cmd/etdi' (a Go program using package keys calls keys.RegisterKMS)")

// kmsSigner resolves ref through the registered resolver: first for
// SHA-256, then again for the hash the key's algorithm calls for.
func kmsSigner(ctx context.Context, ref string) (signature.Signer, crypto.PublicKey, error) {
	kmsMu.RLock()
	resolve := kmsResolve
	kmsMu.RUnlock()
	if resolve == nil {
		scheme, _, _ := strings.Cut(ref, ":")
		return nil, nil, fmt.Errorf("key reference %q: %w", scheme+"://...", errNoKMS)
	}
	sv, err := resolve(ctx, ref, crypto.SHA256)
	if err != nil {
		return nil, nil, fmt.Errorf("kms key %s: %w", ref, err)
	}
	pub, err := sv.PublicKey(options.WithContext(ctx))
	if err != nil {
		return nil, nil, fmt.Errorf("kms key %s: public key: %w", ref, err)
	}
	if err := CheckPublicKey(pub); err != nil {
		return nil, nil, fmt.Errorf("kms key %s: %w", ref, err)
	}
	if h := HashFor(pub); h != crypto.SHA256 {
		if sv, err = resolve(ctx, ref, h); err != nil {
			return nil, nil, fmt.Errorf("kms key %s: %w", ref, err)
		}
	}
	return sv, pub, nil
}
