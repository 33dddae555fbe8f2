package etdi

import (
	"errors"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/strictjson"
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

// Attack: a statement whose subjects disagree with its predicate, listing
// a tool twice or signing another digest than its definition has, is
// refused: a verifier that trusted the subjects would approve a
// definition nobody signed.
func TestParseStatementSubjects(t *testing.T) {
	payload := validBundle(t).Envelope.Payload
	if _, err := ParseStatement(payload); err != nil {
		t.Fatal(err)
	}
	v := mustParse(t, string(payload))
	subjects := v.Get("subject")
	subjects.Elems = append(subjects.Elems, subjects.Elems[0])
	_, err := ParseStatement(strictjson.AppendCanonical(nil, v))
	if err == nil || !strings.Contains(err.Error(), "duplicate subject") {
		t.Fatalf("a subject twice: %v", err)
	}
	subjects.Elems = subjects.Elems[:len(subjects.Elems)-1]
	subjects.Elems[0].Get("digest").Get("sha256").Str = strings.Repeat("ab", 32)
	_, err = ParseStatement(strictjson.AppendCanonical(nil, v))
	var dm *DigestMismatchError
	if !errors.As(err, &dm) {
		t.Fatalf("another digest signed: %v", err)
	}
}

// A line break inside a base64 payload or signature, which Go's decoder
// skips, is refused: one payload, one spelling.
func TestBundleBase64LineBreak(t *testing.T) {
	for _, bad := range []string{
		`{"mediaType":"application/vnd.etdi.bundle.v1+json","dsseEnvelope":{"payloadType":"application/vnd.in-toto+json","payload":"e30=\n","signatures":[{"sig":"AAAA"}]}}`,
		`{"mediaType":"application/vnd.etdi.bundle.v1+json","dsseEnvelope":{"payloadType":"application/vnd.in-toto+json","payload":"e3\r\n0=","signatures":[{"sig":"AAAA"}]}}`,
		`{"mediaType":"application/vnd.etdi.bundle.v1+json","dsseEnvelope":{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"sig":"AA\nAA"}]}}`,
	} {
		if _, err := ParseBundle([]byte(bad)); err == nil || !strings.Contains(err.Error(), "line break") {
			t.Errorf("%s: %v, want a line break refused", bad, err)
		}
	}
	good := `{"mediaType":"application/vnd.etdi.bundle.v1+json","dsseEnvelope":{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"sig":"AAAA"}]}}`
	if _, err := ParseBundle([]byte(good)); err != nil {
		t.Errorf("the same without line breaks: %v", err)
	}
}
