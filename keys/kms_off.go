//go:build !kms

package keys

import (
	"context"
	"crypto"
	"fmt"

	"github.com/sigstore/sigstore/pkg/signature"
)

// KMSEnabled reports whether this build can sign with KMS keys.
const KMSEnabled = false

func kmsSigner(_ context.Context, ref string) (signature.Signer, crypto.PublicKey, error) {
	scheme := ref
	if i := len(ref); i > 0 {
		for j := 0; j < len(ref); j++ {
			if ref[j] == ':' {
				scheme = ref[:j]
				break
			}
		}
	}
	return nil, nil, fmt.Errorf("key reference %q: this etdi was built without KMS support; rebuild with 'go build -tags kms ./cmd/etdi'", scheme+"://...")
}
