package mcpb

// A minimal reader of the PKCS#7 (RFC 2315, CMS RFC 5652) SignedData that
// mcpb sign writes. The PKCS#7 library already in etdi's module graph
// (github.com/digitorus/pkcs7, through sigstore-go) re-encodes the signed
// attributes in DER order before it checks the signature; mcpb sign
// (node-forge) signs them in the order it writes them, which is not DER
// order, so every mcpb signature fails there. The signature covers the
// attributes as written, and this reader keeps those bytes. It reads only
// what verification needs; encoding/asn1 refuses malformed DER.

import (
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
	"time"

	_ "crypto/sha256" // registers SHA-256 for crypto.Hash
	_ "crypto/sha512" // registers SHA-384 and SHA-512
)

var (
	oidSignedData    = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 2}
	oidData          = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
	oidContentType   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 3}
	oidMessageDigest = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 4}
	oidSigningTime   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 5}
)

// digests are the digest algorithms accepted, by OID.
var digests = map[string]crypto.Hash{
	"2.16.840.1.101.3.4.2.1": crypto.SHA256,
	"2.16.840.1.101.3.4.2.2": crypto.SHA384,
	"2.16.840.1.101.3.4.2.3": crypto.SHA512,
}

type contentInfo struct {
	ContentType asn1.ObjectIdentifier
	Content     asn1.RawValue `asn1:"explicit,tag:0"`
}

type encapContent struct {
	ContentType asn1.ObjectIdentifier
	Content     asn1.RawValue `asn1:"explicit,optional,tag:0"`
}

type signedData struct {
	Version          int
	DigestAlgorithms []pkix.AlgorithmIdentifier `asn1:"set"`
	Content          encapContent
	Certificates     asn1.RawValue `asn1:"optional,tag:0"`
	CRLs             asn1.RawValue `asn1:"optional,tag:1"`
	SignerInfos      []signerInfo  `asn1:"set"`
}

type signerInfo struct {
	Version            int
	SID                asn1.RawValue
	DigestAlgorithm    pkix.AlgorithmIdentifier
	SignedAttrs        asn1.RawValue `asn1:"optional,tag:0"`
	SignatureAlgorithm pkix.AlgorithmIdentifier
	Signature          []byte
	UnsignedAttrs      asn1.RawValue `asn1:"optional,tag:1"`
}

type issuerAndSerial struct {
	Issuer asn1.RawValue
	Serial *big.Int
}

type attribute struct {
	Type   asn1.ObjectIdentifier
	Values asn1.RawValue `asn1:"set"`
}

// parseSignedData reads a ContentInfo holding a SignedData without
// content of its own, and its certificates.
func parseSignedData(der []byte) (*signedData, []*x509.Certificate, error) {
	var ci contentInfo
	rest, err := asn1.Unmarshal(der, &ci)
	if err != nil {
		return nil, nil, err
	}
	if len(rest) != 0 {
		return nil, nil, errors.New("data after the ContentInfo")
	}
	if !ci.ContentType.Equal(oidSignedData) {
		return nil, nil, fmt.Errorf("content type %v is not SignedData", ci.ContentType)
	}
	var sd signedData
	rest, err = asn1.Unmarshal(ci.Content.Bytes, &sd)
	if err != nil {
		return nil, nil, err
	}
	if len(rest) != 0 {
		return nil, nil, errors.New("data after the SignedData")
	}
	if len(sd.Content.Content.FullBytes) != 0 {
		return nil, nil, errors.New("the block carries content of its own (mcpb signs detached)")
	}
	if len(sd.Certificates.Bytes) == 0 {
		return nil, nil, errors.New("no certificate")
	}
	certs, err := x509.ParseCertificates(sd.Certificates.Bytes)
	if err != nil {
		return nil, nil, err
	}
	return &sd, certs, nil
}

// findSigner returns the certificate a signer identifier names.
func findSigner(certs []*x509.Certificate, sid asn1.RawValue) *x509.Certificate {
	if sid.Class == asn1.ClassContextSpecific && sid.Tag == 0 {
		for _, c := range certs {
			if len(c.SubjectKeyId) > 0 && string(c.SubjectKeyId) == string(sid.Bytes) {
				return c
			}
		}
		return nil
	}
	var ias issuerAndSerial
	if rest, err := asn1.Unmarshal(sid.FullBytes, &ias); err != nil || len(rest) != 0 || ias.Serial == nil {
		return nil
	}
	for _, c := range certs {
		if string(c.RawIssuer) == string(ias.Issuer.FullBytes) && c.SerialNumber.Cmp(ias.Serial) == 0 {
			return c
		}
	}
	return nil
}

// signatureAlgorithm maps a signer's signature algorithm and digest to
// the x509 algorithm that checks it.
func signatureAlgorithm(oid asn1.ObjectIdentifier, h crypto.Hash) (x509.SignatureAlgorithm, error) {
	rsa := map[crypto.Hash]x509.SignatureAlgorithm{crypto.SHA256: x509.SHA256WithRSA, crypto.SHA384: x509.SHA384WithRSA, crypto.SHA512: x509.SHA512WithRSA}
	ec := map[crypto.Hash]x509.SignatureAlgorithm{crypto.SHA256: x509.ECDSAWithSHA256, crypto.SHA384: x509.ECDSAWithSHA384, crypto.SHA512: x509.ECDSAWithSHA512}
	switch oid.String() {
	case "1.2.840.113549.1.1.1": // rsaEncryption, the digest from digestAlgorithm
		return rsa[h], nil
	case "1.2.840.113549.1.1.11":
		return x509.SHA256WithRSA, nil
	case "1.2.840.113549.1.1.12":
		return x509.SHA384WithRSA, nil
	case "1.2.840.113549.1.1.13":
		return x509.SHA512WithRSA, nil
	case "1.2.840.10045.2.1": // id-ecPublicKey
		return ec[h], nil
	case "1.2.840.10045.4.3.2":
		return x509.ECDSAWithSHA256, nil
	case "1.2.840.10045.4.3.3":
		return x509.ECDSAWithSHA384, nil
	case "1.2.840.10045.4.3.4":
		return x509.ECDSAWithSHA512, nil
	case "1.3.101.112":
		return x509.PureEd25519, nil
	}
	return 0, fmt.Errorf("signature algorithm %v is not RSA, ECDSA or Ed25519 with SHA-2", oid)
}

// readAttributes reads the signed attributes (a DER SET OF Attribute):
// the messageDigest, the contentType and the signing time if present,
// each given once.
func readAttributes(set []byte) (md []byte, ct asn1.ObjectIdentifier, st time.Time, err error) {
	var attrs []attribute
	rest, err := asn1.UnmarshalWithParams(set, &attrs, "set")
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	if len(rest) != 0 {
		return nil, nil, time.Time{}, errors.New("data after the attributes")
	}
	seen := map[string]bool{}
	for _, a := range attrs {
		k := a.Type.String()
		if seen[k] {
			return nil, nil, time.Time{}, fmt.Errorf("attribute %s given twice", k)
		}
		seen[k] = true
		var one asn1.RawValue
		if rest, err := asn1.Unmarshal(a.Values.Bytes, &one); err != nil || len(rest) != 0 {
			if !a.Type.Equal(oidMessageDigest) && !a.Type.Equal(oidContentType) && !a.Type.Equal(oidSigningTime) {
				continue
			}
			return nil, nil, time.Time{}, fmt.Errorf("attribute %s does not hold one value", k)
		}
		switch {
		case a.Type.Equal(oidMessageDigest):
			if _, err := asn1.Unmarshal(one.FullBytes, &md); err != nil {
				return nil, nil, time.Time{}, fmt.Errorf("messageDigest: %v", err)
			}
		case a.Type.Equal(oidContentType):
			if _, err := asn1.Unmarshal(one.FullBytes, &ct); err != nil {
				return nil, nil, time.Time{}, fmt.Errorf("contentType: %v", err)
			}
		case a.Type.Equal(oidSigningTime):
			if _, err := asn1.Unmarshal(one.FullBytes, &st); err != nil {
				return nil, nil, time.Time{}, fmt.Errorf("signingTime: %v", err)
			}
		}
	}
	if md == nil {
		return nil, nil, time.Time{}, errors.New("no messageDigest")
	}
	if ct == nil {
		return nil, nil, time.Time{}, errors.New("no contentType")
	}
	return md, ct, st, nil
}
