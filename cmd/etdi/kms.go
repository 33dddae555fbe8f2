//go:build kms

package main

import (
	"context"
	"crypto"

	"github.com/etdi-dev/etdi/keys"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/kms"

	// The providers register themselves for awskms://, gcpkms://,
	// azurekms:// and hashivault:// key references. They are imported here,
	// in the command, and not in package keys, so that programs importing
	// etdi's library do not link the cloud SDKs.
	_ "github.com/sigstore/sigstore/pkg/signature/kms/aws"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/azure"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/gcp"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/hashivault"
)

// In builds with the kms tag, etdi resolves KMS key references through
// sigstore's KMS registry: the providers above, else a
// sigstore-kms-<scheme> plugin program on PATH.
func init() {
	keys.RegisterKMS(func(ctx context.Context, ref string, hash crypto.Hash) (signature.SignerVerifier, error) {
		return kms.Get(ctx, ref, hash)
	})
}
