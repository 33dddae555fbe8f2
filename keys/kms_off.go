//go:build !kms

package keys

import (
	"context"
	"crypto"
	"fmt"
	"strings"

	"github.com/sigstore/sigstore/pkg/signature"
)

// KMSEnabled reports whether this build can sign with KMS keys.
const KMSEnabled = false

func kmsSigner(_ context.Context, ref string) (signature.Signer, crypto.PublicKey, error) {
	scheme, _, _ := strings.Cut(ref, ":")
	return nil, nil, fmt.Errorf("key reference %q: this etdi was built without KMS support; rebuild with 'go build -tags kms ./cmd/etdi'", scheme+"://...")
}
