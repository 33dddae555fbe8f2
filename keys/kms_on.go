//go:build kms

package keys

import (
	"context"
	"crypto"
	"fmt"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/kms"
	"github.com/sigstore/sigstore/pkg/signature/options"

	// The providers register themselves for awskms://, gcpkms://,
	// azurekms:// and hashivault:// key references.
	_ "github.com/sigstore/sigstore/pkg/signature/kms/aws"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/azure"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/gcp"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/hashivault"
)

// KMSEnabled reports whether this build can sign with KMS keys.
const KMSEnabled = true

// kmsSigner resolves ref through sigstore's KMS registry: the AWS, GCP,
// Azure and HashiCorp Vault providers linked into this build, else a
// sigstore-kms-<scheme> plugin program on PATH.
func kmsSigner(ctx context.Context, ref string) (signature.Signer, crypto.PublicKey, error) {
	sv, err := kms.Get(ctx, ref, crypto.SHA256)
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
		if sv, err = kms.Get(ctx, ref, h); err != nil {
			return nil, nil, fmt.Errorf("kms key %s: %w", ref, err)
		}
	}
	return sv, pub, nil
}
