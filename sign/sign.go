// Package sign makes bundles: a manifest becomes an in-toto statement
// inside a DSSE envelope (SPEC.md §5, §6), signed by one [Signer]: a
// provider key ([Key], [KeyPair]), an identity provider token bound to the
// statement ([IDPToken]) or a keyless Sigstore certificate ([Keyless]).
// [Bundle] does it all, after checking the release against the previous
// one (docs/provider.md#a-release-against-the-previous-one); [Build], [SignPayload] and [Sign] are its steps.
package sign

import (
	"bytes"
	"crypto"
	"fmt"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/keys"
	"github.com/sigstore/sigstore/pkg/signature"
)

// DefaultValidity is how long a bundle is valid when [Options.Expires] is zero.
const DefaultValidity = 180 * 24 * time.Hour

// Options control the statement's times and sequence.
type Options struct {
	// IssuedAt defaults to the current time.
	IssuedAt time.Time
	// Expires defaults to IssuedAt + DefaultValidity.
	Expires time.Time
	// Sequence defaults to IssuedAt in Unix seconds, which increases with
	// every signing as long as the signer's clock does.
	Sequence uint64
}

// Build makes the statement for m and its payload, the exact bytes that
// signatures and identity provider tokens are bound to.
func Build(m *etdi.Manifest, opts Options) (*etdi.Statement, []byte, error) {
	issued := opts.IssuedAt
	if issued.IsZero() {
		issued = time.Now()
	}
	expires := opts.Expires
	if expires.IsZero() {
		expires = issued.Add(DefaultValidity)
	}
	seq := opts.Sequence
	if seq == 0 {
		seq = uint64(issued.Unix())
	}
	st, err := etdi.NewStatement(m, issued, expires, seq)
	if err != nil {
		return nil, nil, err
	}
	return st, st.Payload(), nil
}

// SignPayload signs payload with signer, whose public key is pub. The
// signature is checked against pub before returning, so a misconfigured
// signer (for example a KMS key with another padding) fails here rather
// than at every client.
func SignPayload(payload []byte, signer signature.Signer, pub crypto.PublicKey) (etdi.Signature, error) {
	if err := keys.CheckPublicKey(pub); err != nil {
		return etdi.Signature{}, err
	}
	// DSSE v1: the signature covers PAE(payloadType, payload). The PAE is
	// the one sigstore's and securesystemslib's DSSE code computes (tested).
	pae := etdi.PAE(etdi.PayloadType, payload)
	sig, err := signer.SignMessage(bytes.NewReader(pae))
	if err != nil {
		return etdi.Signature{}, fmt.Errorf("signing: %w", err)
	}
	v, err := keys.Verifier(pub)
	if err != nil {
		return etdi.Signature{}, err
	}
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(pae)); err != nil {
		keyID, _ := keys.ID(pub)
		return etdi.Signature{}, fmt.Errorf("signing: the signature does not verify with key %s (%s): %w", keys.ShortID(keyID), keys.Algorithm(pub), err)
	}
	// No keyid: DSSE verifiers (sigstore, securesystemslib) treat a keyid
	// as a filter and skip signatures whose keyid is not in their own
	// format, so writing one breaks interoperability.
	return etdi.Signature{Sig: sig}, nil
}

// Sign signs manifest m with signer, whose public key is pub, and returns
// the bundle.
func Sign(m *etdi.Manifest, signer signature.Signer, pub crypto.PublicKey, opts Options) (*etdi.Bundle, error) {
	if err := keys.CheckPublicKey(pub); err != nil {
		return nil, err
	}
	_, payload, err := Build(m, opts)
	if err != nil {
		return nil, err
	}
	sig, err := SignPayload(payload, signer, pub)
	if err != nil {
		return nil, err
	}
	return &etdi.Bundle{Envelope: etdi.Envelope{PayloadType: etdi.PayloadType, Payload: payload, Signatures: []etdi.Signature{sig}}}, nil
}
