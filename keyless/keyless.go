// Package keyless signs and verifies etdi statements without a long-lived
// key, with Sigstore (SPEC.md §16): the signer's OIDC identity gets a
// short-lived certificate from a Fulcio certificate authority, the
// signature is recorded in a Rekor transparency log, and the result is a
// Sigstore bundle (v0.3) whose DSSE payload is the etdi statement.
//
// Verification needs no network: the certificate chain, the log entry and
// its signed time are checked against Sigstore trusted roots the client
// keeps ([github.com/etdi-dev/etdi/trust.Policy.SigstoreRoots]). Which
// identity may sign for which provider is the trust policy's business
// (package [github.com/etdi-dev/etdi/verify]).
package keyless

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/strictjson"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
)

// MediaType is the media type of the Sigstore bundles etdi writes and
// reads: version 0.3 of the Sigstore bundle format.
const MediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// MaxBundleSize bounds a Sigstore bundle, as [etdi.MaxManifestSize] bounds
// an etdi bundle.
const MaxBundleSize = etdi.MaxManifestSize

// IsBundle reports whether data claims to be a Sigstore bundle: a JSON
// object whose mediaType names one. It does not validate anything else.
func IsBundle(data []byte) bool {
	var head struct {
		MediaType string `json:"mediaType"`
	}
	// The scan for the media type's text keeps the JSON decode off the
	// path of every (possibly large) etdi bundle.
	if len(data) > MaxBundleSize || !bytes.Contains(data, []byte(`application/vnd.dev.sigstore.bundle`)) || json.Unmarshal(data, &head) != nil {
		return false
	}
	return bytes.HasPrefix([]byte(head.MediaType), []byte("application/vnd.dev.sigstore.bundle"))
}

// Bundle is a parsed Sigstore bundle carrying an etdi statement.
type Bundle struct {
	// Envelope is the DSSE envelope, as package etdi reads it: its
	// payload is the statement.
	Envelope etdi.Envelope
	sigstore *sgbundle.Bundle
}

// Parse reads a Sigstore bundle strictly: version 0.3 only, unknown
// fields rejected (protobuf JSON), a DSSE envelope of an in-toto
// statement with exactly one signature, and a signing certificate (a
// bundle verified by a public key instead is not keyless).
func Parse(data []byte) (*Bundle, error) {
	if len(data) > MaxBundleSize {
		return nil, fmt.Errorf("Sigstore bundle larger than %d bytes", MaxBundleSize)
	}
	// The bundle's own JSON is checked by etdi's strict reader first:
	// protobuf's JSON reader takes the last of two duplicate members,
	// which would let two readers see two bundles.
	if _, err := strictjson.Parse(data); err != nil {
		return nil, err
	}
	var b sgbundle.Bundle
	if err := b.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("not a Sigstore bundle: %v", err)
	}
	if b.GetMediaType() != MediaType {
		return nil, fmt.Errorf("Sigstore bundle media type %q is not %q", b.GetMediaType(), MediaType)
	}
	env := b.GetDsseEnvelope()
	if env == nil {
		return nil, errors.New("Sigstore bundle signs no DSSE envelope (a message signature carries no etdi statement)")
	}
	if env.GetPayloadType() != etdi.PayloadType {
		return nil, &etdi.PayloadTypeError{Got: env.GetPayloadType()}
	}
	if len(env.GetSignatures()) != 1 {
		return nil, fmt.Errorf("Sigstore bundle envelope has %d signatures, want 1", len(env.GetSignatures()))
	}
	vc, err := b.VerificationContent()
	if err != nil {
		return nil, fmt.Errorf("Sigstore bundle: %v", err)
	}
	if vc.Certificate() == nil {
		return nil, errors.New("Sigstore bundle is verified by a public key, not a certificate: it is not keyless")
	}
	out := &Bundle{sigstore: &b}
	out.Envelope.PayloadType = env.GetPayloadType()
	out.Envelope.Payload = env.GetPayload()
	for _, s := range env.GetSignatures() {
		out.Envelope.Signatures = append(out.Envelope.Signatures, etdi.Signature{Sig: s.GetSig(), KeyID: s.GetKeyid()})
	}
	return out, nil
}

// Identity is who a verified keyless signature says signed: the identity
// in the certificate and the OIDC issuer that vouched for it, with what the
// certificate says of the CI run, and when the signature was made.
type Identity struct {
	Issuer   string `json:"issuer"`
	Identity string `json:"identity"`
	// Repository, Ref and Workflow are the certificate's source repository,
	// its ref and the build configuration (for GitHub Actions the workflow
	// file at its ref); empty when the issuer says nothing of them.
	Repository string `json:"repository,omitempty"`
	Ref        string `json:"ref,omitempty"`
	Workflow   string `json:"workflow,omitempty"`
	// SignedAt is the earliest verified time the signature existed at: the
	// transparency log's integrated time or a signed timestamp.
	SignedAt time.Time `json:"signedAt"`
	// LogIndex is the transparency log entry's index.
	LogIndex int64 `json:"logIndex"`
}

// Verify checks b against the trusted material: the certificate chains to
// a certificate authority of it and was valid when the signature was
// made; the signature is recorded in a transparency log of it, with an
// inclusion proof or a signed promise; that time is vouched for by the
// log (integrated time) or a timestamp authority; the certificate carries
// signed certificate timestamps when the material lists certificate
// transparency logs; and the DSSE signature verifies with the
// certificate's key. It returns who signed; whether that identity may
// sign for a provider is for the caller to decide.
func Verify(b *Bundle, tm root.TrustedMaterial) (*Identity, error) {
	if tm == nil {
		return nil, errors.New("no Sigstore trusted root")
	}
	opts := []sgverify.VerifierOption{sgverify.WithTransparencyLog(1), sgverify.WithObserverTimestamps(1)}
	if len(tm.CTLogs()) > 0 {
		opts = append(opts, sgverify.WithSignedCertificateTimestamps(1))
	}
	v, err := sgverify.NewVerifier(tm, opts...)
	if err != nil {
		return nil, err
	}
	// The statement's subjects are tool digests that the caller checks
	// against the tools; there is no artifact here. The envelope's
	// signature is still verified.
	res, err := v.Verify(b.sigstore, sgverify.NewPolicy(sgverify.WithoutArtifactUnsafe(), sgverify.WithoutIdentitiesUnsafe()))
	if err != nil {
		return nil, err
	}
	if res.Signature == nil || res.Signature.Certificate == nil {
		return nil, errors.New("the bundle was not signed with a certificate")
	}
	c := res.Signature.Certificate
	s := &Identity{Issuer: c.Extensions.Issuer, Identity: c.SubjectAlternativeName,
		Repository: c.Extensions.SourceRepositoryURI, Ref: c.Extensions.SourceRepositoryRef, Workflow: c.Extensions.BuildConfigURI}
	for _, ts := range res.VerifiedTimestamps {
		if s.SignedAt.IsZero() || ts.Timestamp.Before(s.SignedAt) {
			s.SignedAt = ts.Timestamp.UTC()
		}
	}
	if entries, err := b.sigstore.TlogEntries(); err == nil && len(entries) > 0 {
		s.LogIndex = entries[0].LogIndex()
	}
	if s.Issuer == "" || s.Identity == "" {
		return nil, errors.New("the signing certificate names no OIDC issuer or no identity")
	}
	return s, nil
}

// IdentityOf reads, without verifying anything, the identity and issuer that
// a Sigstore bundle's certificate names: for messages to the signer who
// just made it, never for a decision.
func IdentityOf(data []byte) (identity, issuer string, err error) {
	b, err := Parse(data)
	if err != nil {
		return "", "", err
	}
	vc, err := b.sigstore.VerificationContent()
	if err != nil {
		return "", "", err
	}
	c := vc.Certificate()
	sum, err := certificate.SummarizeCertificate(c)
	if err != nil {
		return "", "", err
	}
	return sum.SubjectAlternativeName, sum.Extensions.Issuer, nil
}
