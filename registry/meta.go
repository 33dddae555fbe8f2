package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/strictjson"
)

// EtdiMeta is what a provider publishes in server.json about its signed
// bundle, under _meta["io.modelcontextprotocol.registry/publisher-provided"]["dev.etdi"]:
// where the bundle is and the SHA-256 of its file. The bundle itself is
// published beside the release; the registry only carries the pointer.
type EtdiMeta struct {
	// Bundle is the bundle's URL: https, or http to a loopback host.
	Bundle string `json:"bundle"`
	// Digest is "sha256:" and the 64 lowercase hex digits of the bundle
	// file's SHA-256.
	Digest string `json:"digest"`
}

// Validate checks the URL and the digest's form.
func (m EtdiMeta) Validate() error {
	u, err := url.Parse(m.Bundle)
	if err != nil || u.Host == "" || u.User != nil || !etdi.SecureURL(u) {
		return fmt.Errorf("dev.etdi bundle %q: want an https URL (http only to a loopback host), without user information", m.Bundle)
	}
	hexPart, ok := strings.CutPrefix(m.Digest, "sha256:")
	if !ok || !hex64(hexPart) {
		return fmt.Errorf("dev.etdi digest %q: want sha256: and 64 lowercase hex digits", m.Digest)
	}
	return nil
}

// EtdiMeta returns the entry's dev.etdi metadata; ok is false when the
// server.json carries none (an unsigned entry). Metadata that is present
// but malformed is an error, never an unsigned entry.
func (s *ServerJSON) EtdiMeta() (m EtdiMeta, ok bool, err error) {
	raw, present := s.Meta[PublisherProvidedKey]
	if !present {
		return m, false, nil
	}
	var pp map[string]json.RawMessage
	if err := json.Unmarshal(raw, &pp); err != nil {
		return m, false, fmt.Errorf("_meta %s: %w", PublisherProvidedKey, err)
	}
	e, present := pp[EtdiKey]
	if !present {
		return m, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(e))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, false, fmt.Errorf("_meta %s %s: %w", PublisherProvidedKey, EtdiKey, err)
	}
	if err := m.Validate(); err != nil {
		return m, false, err
	}
	return m, true, nil
}

// SetEtdiMeta returns doc, a server.json document, with its dev.etdi
// metadata set to m: every other member keeps its value and its place
// (the document is re-indented with two spaces). It refuses a result whose
// publisher-provided object is larger than [MaxPublisherMeta] bytes, which
// the registry would refuse at publication.
func SetEtdiMeta(doc []byte, m EtdiMeta) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if _, err := ParseServerJSON(doc); err != nil {
		return nil, err
	}
	root, err := strictjson.Parse(doc)
	if err != nil {
		return nil, err
	}
	meta := member(root, "_meta")
	if meta.Kind != strictjson.Object {
		return nil, fmt.Errorf("server.json: _meta is not an object")
	}
	pp := member(meta, PublisherProvidedKey)
	if pp.Kind != strictjson.Object {
		return nil, fmt.Errorf("server.json: _meta %s is not an object", PublisherProvidedKey)
	}
	e := &strictjson.Value{Kind: strictjson.Object, Members: []strictjson.Member{
		{Name: "bundle", Value: &strictjson.Value{Kind: strictjson.String, Str: m.Bundle}},
		{Name: "digest", Value: &strictjson.Value{Kind: strictjson.String, Str: m.Digest}},
	}}
	set(pp, EtdiKey, e)
	if n := len(strictjson.AppendCanonical(nil, pp)); n > MaxPublisherMeta {
		return nil, fmt.Errorf("server.json: _meta %s would be %d bytes, more than the registry's %d", PublisherProvidedKey, n, MaxPublisherMeta)
	}
	out := strictjson.AppendIndent(nil, root, "", "  ")
	return append(out, '\n'), nil
}

// member returns the object member name of v, adding an empty object at
// the end when there is none.
func member(v *strictjson.Value, name string) *strictjson.Value {
	if m := v.Get(name); m != nil {
		return m
	}
	m := &strictjson.Value{Kind: strictjson.Object}
	v.Members = append(v.Members, strictjson.Member{Name: name, Value: m})
	return m
}

func set(v *strictjson.Value, name string, val *strictjson.Value) {
	for i := range v.Members {
		if v.Members[i].Name == name {
			v.Members[i].Value = val
			return
		}
	}
	v.Members = append(v.Members, strictjson.Member{Name: name, Value: val})
}
