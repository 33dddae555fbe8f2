package etdi

import (
	"errors"
	"strings"
	"testing"
)

// validBundle is the bundle of a vector that verifies.
func validBundle(t *testing.T) *Bundle {
	t.Helper()
	b, err := ParseBundle(mustRead(t, "testdata/vectors/valid_ed25519/bundle.etdi.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Attack: an envelope of another payload type is refused before its
// payload is read as a statement (DSSE binds the type into the signature,
// but a parser that ignores it reads a foreign payload as etdi's).
func TestParseBundlePayloadType(t *testing.T) {
	b := validBundle(t)
	b.Envelope.PayloadType = "application/vnd.other+json"
	_, err := ParseBundle(b.Marshal())
	var pe *PayloadTypeError
	if !errors.As(err, &pe) || pe.Got != "application/vnd.other+json" {
		t.Fatalf("got %v", err)
	}
}

// An envelope carries at most MaxSignatures signatures; one more is
// refused, so a bundle cannot make a verifier try keys without end.
func TestParseBundleMaxSignatures(t *testing.T) {
	b := validBundle(t)
	sig := b.Envelope.Signatures[0]
	b.Envelope.Signatures = nil
	for range MaxSignatures {
		b.Envelope.Signatures = append(b.Envelope.Signatures, sig)
	}
	if _, err := ParseBundle(b.Marshal()); err != nil {
		t.Fatalf("MaxSignatures refused: %v", err)
	}
	b.Envelope.Signatures = append(b.Envelope.Signatures, sig)
	if _, err := ParseBundle(b.Marshal()); err == nil || !strings.Contains(err.Error(), "more than 16 signatures") {
		t.Fatalf("MaxSignatures+1: %v", err)
	}
}
