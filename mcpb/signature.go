package mcpb

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// The signature block mcpb sign appends to the zip: the header, the
// DER's length as a 32-bit little-endian integer, a PKCS#7 SignedData in
// DER with the content detached, the footer.
const (
	sigHeader = "MCPB_SIG_V1"
	sigFooter = "MCPB_SIG_END"
	// MaxSignatureSize bounds the PKCS#7 block, in bytes.
	MaxSignatureSize = 256 << 10
)

// ErrSignatureInvalid is wrapped by [Signature.Err] when a signature
// block is present but does not verify over the content before it.
var ErrSignatureInvalid = errors.New("MCPB signature does not verify")

// Signature is the verdict on an MCPB file's signature block.
type Signature struct {
	// Signer is the certificate that signed, when one could be found
	// (also when the signature does not verify).
	Signer *Signer
	// Err is nil when the signature verifies over everything before the
	// block; otherwise it wraps [ErrSignatureInvalid] and says why.
	Err error
}

// Signer describes the certificate of an MCPB signature.
type Signer struct {
	Subject string
	Issuer  string
	// CommonName is the subject's common name (what mcpb verify calls
	// the publisher).
	CommonName string
	// Fingerprint is the lowercase hex SHA-256 of the certificate's DER,
	// as mcpb verify prints it.
	Fingerprint string
	// SelfSigned says the certificate is its own issuer: its subject is
	// its issuer and its own key verifies its signature.
	SelfSigned bool
	NotBefore  time.Time
	NotAfter   time.Time
	// Chain are the further certificates the block carries, as given
	// (intermediates); etdi does not build a chain from them.
	Chain int
}

// String is "CN=… (self-signed)" or "CN=…, issued by CN=…".
func (s *Signer) String() string {
	if s.SelfSigned {
		return s.Subject + " (self-signed)"
	}
	return s.Subject + ", issued by " + s.Issuer
}

// splitSignature finds the signature block at the end of data. present is
// false when data does not end with the footer; an error means it does
// but the block is malformed.
func splitSignature(data []byte) (content, der []byte, present bool, err error) {
	if !bytes.HasSuffix(data, []byte(sigFooter)) {
		return data, nil, false, nil
	}
	bad := func(why string) ([]byte, []byte, bool, error) {
		return data, nil, true, fmt.Errorf("%w: signature block %s", ErrSignatureInvalid, why)
	}
	end := len(data) - len(sigFooter)
	h := bytes.LastIndex(data[:end], []byte(sigHeader))
	// The header may occur inside the DER: take the earliest header whose
	// length field reaches exactly the footer.
	for i := 0; i <= end; {
		j := bytes.Index(data[i:end], []byte(sigHeader))
		if j < 0 {
			break
		}
		at := i + j
		off := at + len(sigHeader)
		if off+4 <= end {
			n := binary.LittleEndian.Uint32(data[off : off+4])
			if uint64(off)+4+uint64(n) == uint64(end) {
				h = at
				break
			}
		}
		i = at + 1
	}
	if h < 0 {
		return bad("has a footer but no header")
	}
	off := h + len(sigHeader)
	if off+4 > end {
		return bad("is truncated")
	}
	n := binary.LittleEndian.Uint32(data[off : off+4])
	if uint64(off)+4+uint64(n) != uint64(end) {
		return bad("length does not match its size")
	}
	if n > MaxSignatureSize {
		return bad(fmt.Sprintf("is larger than %d bytes", MaxSignatureSize))
	}
	return data[:h], data[off+4 : end], true, nil
}

// verifySignature checks a detached PKCS#7 SignedData over content: one
// signer, whose certificate is in the block, a digest of the SHA-2
// family, the contentType attribute id-data and the messageDigest
// attribute equal to the content's digest, the signature over the signed
// attributes (as they are encoded in the block) made by the certificate's
// key, and the signing time it states, if any, within the certificate's
// validity. It does not build a chain to a root: who may sign is the
// trust policy's decision.
func verifySignature(content, der []byte) *Signature {
	s := &Signature{}
	bad := func(format string, args ...any) *Signature {
		s.Err = fmt.Errorf("%w: "+format, append([]any{ErrSignatureInvalid}, args...)...)
		return s
	}
	sd, certs, err := parseSignedData(der)
	if err != nil {
		return bad("PKCS#7: %v", err)
	}
	if len(sd.SignerInfos) != 1 {
		return bad("%d signers (want one)", len(sd.SignerInfos))
	}
	si := sd.SignerInfos[0]
	cert := findSigner(certs, si.SID)
	if cert == nil {
		return bad("the signer's certificate is not in the block")
	}
	s.Signer = describe(cert, len(certs)-1)
	h, ok := digests[si.DigestAlgorithm.Algorithm.String()]
	if !ok {
		return bad("digest algorithm %v is not SHA-256, SHA-384 or SHA-512", si.DigestAlgorithm.Algorithm)
	}
	alg, err := signatureAlgorithm(si.SignatureAlgorithm.Algorithm, h)
	if err != nil {
		return bad("%v", err)
	}
	signed := content
	if len(si.SignedAttrs.FullBytes) > 0 {
		// The signature covers the attributes as DER with the SET OF tag
		// in place of [0]: the bytes as the signer wrote them, not a
		// re-encoding (node-forge does not sort them into DER order).
		signed = append([]byte{0x31}, si.SignedAttrs.FullBytes[1:]...)
		md, ct, st, err := readAttributes(signed)
		if err != nil {
			return bad("signed attributes: %v", err)
		}
		if !ct.Equal(oidData) {
			return bad("content type %v is not data", ct)
		}
		hh := h.New()
		hh.Write(content)
		if !bytes.Equal(md, hh.Sum(nil)) {
			return bad("the file was changed after it was signed")
		}
		if !st.IsZero() && (st.Before(cert.NotBefore) || st.After(cert.NotAfter)) {
			return bad("signing time %s is outside the certificate's validity", st.UTC().Format(time.RFC3339))
		}
	}
	if err := cert.CheckSignature(alg, signed, si.Signature); err != nil {
		return bad("%v", err)
	}
	return s
}

func describe(c *x509.Certificate, chain int) *Signer {
	fp := sha256.Sum256(c.Raw)
	return &Signer{
		Subject:     c.Subject.String(),
		Issuer:      c.Issuer.String(),
		CommonName:  c.Subject.CommonName,
		Fingerprint: hex.EncodeToString(fp[:]),
		SelfSigned:  bytes.Equal(c.RawSubject, c.RawIssuer) && c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil,
		NotBefore:   c.NotBefore,
		NotAfter:    c.NotAfter,
		Chain:       chain,
	}
}
