package keyless_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/keyless"
)

// A Sigstore bundle with a duplicated member is refused: protobuf's JSON
// reader would take the last one, another reader the first, and the two
// would see two bundles.
func TestParseRefusesDuplicateMembers(t *testing.T) {
	b, _ := signed(t, sigstoretest.New(t), nil)
	if _, err := keyless.Parse(b); err != nil {
		t.Fatal(err)
	}
	i := bytes.IndexByte(b, '{')
	dup := append(append(append([]byte{}, b[:i+1]...), `"mediaType":"application/vnd.dev.sigstore.bundle.v0.1+json",`...), b[i+1:]...)
	if _, err := keyless.Parse(dup); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("duplicated mediaType: %v", err)
	}
}
