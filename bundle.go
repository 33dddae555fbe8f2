package etdi

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/etdi-dev/etdi/strictjson"
)

// MaxSignatures bounds the signatures of one envelope.
const MaxSignatures = 16

// Bundle is the file a provider publishes next to its server (SPEC.md §6):
// a DSSE envelope around the statement and, optionally, an identity
// provider token that vouches for the same payload.
type Bundle struct {
	Envelope Envelope
	// IDPToken is an optional JWT issued by the provider's identity
	// provider, bound to the payload digest.
	IDPToken string
}

// Envelope is a DSSE envelope (https://github.com/secure-systems-lab/dsse).
type Envelope struct {
	PayloadType string
	Payload     []byte // decoded
	Signatures  []Signature
}

// Signature is one DSSE signature. KeyID is a hint only; it is never
// trusted to select or identify a key.
type Signature struct {
	KeyID string
	Sig   []byte
}

// PAE is the DSSE v1 pre-authentication encoding of an envelope's payload,
// the bytes a signature covers: "DSSEv1" SP len(type) SP type SP len(body)
// SP body.
func PAE(payloadType string, payload []byte) []byte {
	b := make([]byte, 0, len(payload)+len(payloadType)+32)
	b = append(b, "DSSEv1 "...)
	b = fmt.Appendf(b, "%d %s %d ", len(payloadType), payloadType, len(payload))
	return append(b, payload...)
}

// Marshal serializes the bundle as canonical JSON.
func (b *Bundle) Marshal() []byte {
	sigs := &strictjson.Value{Kind: strictjson.Array, Elems: []*strictjson.Value{}}
	for _, s := range b.Envelope.Signatures {
		so := obj2()
		if s.KeyID != "" {
			so.Members = append(so.Members, strictjson.Member{Name: "keyid", Value: str(s.KeyID)})
		}
		so.Members = append(so.Members, strictjson.Member{Name: "sig", Value: str(base64.StdEncoding.EncodeToString(s.Sig))})
		sigs.Elems = append(sigs.Elems, so)
	}
	v := obj2(
		strictjson.Member{Name: "mediaType", Value: str(BundleMediaType)},
		strictjson.Member{Name: "dsseEnvelope", Value: obj2(
			strictjson.Member{Name: "payloadType", Value: str(b.Envelope.PayloadType)},
			strictjson.Member{Name: "payload", Value: str(base64.StdEncoding.EncodeToString(b.Envelope.Payload))},
			strictjson.Member{Name: "signatures", Value: sigs},
		)},
	)
	if b.IDPToken != "" {
		v.Members = append(v.Members, strictjson.Member{Name: "idpToken", Value: str(b.IDPToken)})
	}
	out := strictjson.AppendCanonical(nil, v)
	return append(out, '\n')
}

// ParseBundle parses a bundle file strictly (SPEC.md §6). It checks form
// only: payloadType, encodings and sizes. Signatures and the payload's
// content are checked by package verify.
func ParseBundle(data []byte) (*Bundle, error) {
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("bundle larger than %d bytes", MaxManifestSize)
	}
	v, err := strictjson.Parse(data)
	if err != nil {
		return nil, err
	}
	o, err := strictjson.Root(v).Object()
	if err != nil {
		return nil, err
	}
	if err := o.Only("mediaType", "dsseEnvelope", "idpToken"); err != nil {
		return nil, err
	}
	mt, err := o.Field("mediaType").Str()
	if err != nil {
		return nil, err
	}
	if mt != BundleMediaType {
		return nil, o.Field("mediaType").Errorf("%q is not %q", truncate(mt, 80), BundleMediaType)
	}
	b := &Bundle{}
	if b.IDPToken, err = o.Field("idpToken").OptStr(); err != nil {
		return nil, err
	}
	eo, err := o.Field("dsseEnvelope").Object()
	if err != nil {
		return nil, err
	}
	if err := eo.Only("payloadType", "payload", "signatures"); err != nil {
		return nil, err
	}
	if b.Envelope.PayloadType, err = eo.Field("payloadType").Str(); err != nil {
		return nil, err
	}
	if b.Envelope.PayloadType != PayloadType {
		return nil, &PayloadTypeError{Got: b.Envelope.PayloadType}
	}
	p64, err := eo.Field("payload").Str()
	if err != nil {
		return nil, err
	}
	if b.Envelope.Payload, err = decodeBase64(p64); err != nil {
		return nil, eo.Field("payload").Errorf("not standard padded base64: %v", err)
	}
	sa, err := eo.Field("signatures").Array()
	if err != nil {
		return nil, err
	}
	if len(sa.V.Elems) > MaxSignatures {
		return nil, sa.Errorf("more than %d signatures", MaxSignatures)
	}
	for i := range sa.V.Elems {
		so, err := sa.Elem(i).Object()
		if err != nil {
			return nil, err
		}
		if err := so.Only("keyid", "sig"); err != nil {
			return nil, err
		}
		var s Signature
		if s.KeyID, err = so.Field("keyid").OptStr(); err != nil {
			return nil, err
		}
		s64, err := so.Field("sig").Str()
		if err != nil {
			return nil, err
		}
		if s.Sig, err = decodeBase64(s64); err != nil {
			return nil, so.Field("sig").Errorf("not standard padded base64: %v", err)
		}
		if len(s.Sig) == 0 || len(s.Sig) > 1024 {
			return nil, so.Field("sig").Errorf("signature of %d bytes", len(s.Sig))
		}
		b.Envelope.Signatures = append(b.Envelope.Signatures, s)
	}
	return b, nil
}

// PayloadTypeError reports an envelope whose payloadType is not
// [PayloadType]. Signatures over another payload type are never accepted.
type PayloadTypeError struct{ Got string }

func (e *PayloadTypeError) Error() string {
	return fmt.Sprintf("dsseEnvelope.payloadType: %q is not %q", truncate(e.Got, 80), PayloadType)
}

// decodeBase64 decodes standard padded base64 with zero padding bits, and
// nothing else: Go's decoder skips CR and LF, which would let one payload
// or signature be written in many ways.
func decodeBase64(s string) ([]byte, error) {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return nil, fmt.Errorf("line break at byte %d", i)
	}
	return base64.StdEncoding.Strict().DecodeString(s)
}
