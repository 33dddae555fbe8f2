package sign_test

import (
	"bytes"
	"context"
	"crypto"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/strictjson"
	ssldsse "github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
)

func manifest(t testing.TB) *etdi.Manifest {
	t.Helper()
	b, err := os.ReadFile("../cmd/etdi/demodata/weather.manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := etdi.ParseManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type sslVerifier struct {
	v  signature.Verifier
	id string
}

func (s sslVerifier) Verify(_ context.Context, data, sig []byte) error {
	return s.v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(data))
}
func (s sslVerifier) KeyID() (string, error)   { return s.id, nil }
func (s sslVerifier) Public() crypto.PublicKey { return nil }

// Bundles are standard DSSE: sigstore's and securesystemslib's verifiers
// accept the envelope as etdi writes it.
func TestSignInterop(t *testing.T) {
	for _, alg := range []string{keys.Ed25519, keys.ECDSAP256, keys.ECDSAP384, keys.RSAPSS} {
		t.Run(alg, func(t *testing.T) {
			priv, _ := keys.Generate(alg)
			s, _ := keys.Signer(priv)
			issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			b, err := sign.Sign(manifest(t), s, priv.Public(), sign.Options{IssuedAt: issued})
			if err != nil {
				t.Fatal(err)
			}
			st, err := etdi.ParseStatement(b.Envelope.Payload)
			if err != nil {
				t.Fatal(err)
			}
			if st.Sequence != uint64(issued.Unix()) || !st.Expires.Equal(issued.Add(sign.DefaultValidity)) {
				t.Errorf("defaults: sequence %d expires %v", st.Sequence, st.Expires)
			}
			raw := b.Marshal()
			// Extract the dsseEnvelope member as it is on disk.
			v, _ := strictjson.Parse(raw)
			envJSON := strictjson.AppendCanonical(nil, v.Get("dsseEnvelope"))
			kv, _ := keys.Verifier(priv.Public())
			if err := dsse.WrapVerifier(kv).VerifySignature(bytes.NewReader(envJSON), nil); err != nil {
				t.Fatalf("sigstore dsse verifier: %v", err)
			}
			id, _ := keys.ID(priv.Public())
			ev, err := ssldsse.NewEnvelopeVerifier(sslVerifier{kv, id})
			if err != nil {
				t.Fatal(err)
			}
			var env ssldsse.Envelope
			env.PayloadType = b.Envelope.PayloadType
			env.Payload = string(strictjson.Root(v).V.Get("dsseEnvelope").Get("payload").Str)
			env.Signatures = []ssldsse.Signature{{Sig: v.Get("dsseEnvelope").Get("signatures").Elems[0].Get("sig").Str}}
			if _, err := ev.Verify(context.Background(), &env); err != nil {
				t.Fatalf("securesystemslib verifier: %v", err)
			}
		})
	}
}

func TestSignRefusesMismatchedKey(t *testing.T) {
	a, _ := keys.Generate(keys.Ed25519)
	b, _ := keys.Generate(keys.Ed25519)
	s, _ := keys.Signer(a)
	_, err := sign.Sign(manifest(t), s, b.Public(), sign.Options{})
	if err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("signing with a mismatched public key: %v", err)
	}
	_, err = sign.Sign(manifest(t), s, a.Public(), sign.Options{IssuedAt: time.Now(), Expires: time.Now().Add(-time.Hour)})
	if err == nil {
		t.Fatal("expiry before issue accepted")
	}
}

// etdi's PAE is byte for byte the DSSE library's.
func TestPAEMatchesDSSE(t *testing.T) {
	for _, payload := range [][]byte{nil, []byte("x"), []byte("{\"a\":\"\u00e9 ü\"}"), bytes.Repeat([]byte("a"), 1000)} {
		for _, pt := range []string{etdi.PayloadType, "", "application/json"} {
			if got, want := etdi.PAE(pt, payload), ssldsse.PAE(pt, payload); !bytes.Equal(got, want) {
				t.Fatalf("PAE(%q, %q) = %q, want %q", pt, payload, got, want)
			}
		}
	}
}
