// Package etdi defines the Enhanced Tool Definition Interface data model:
// tool manifests, the digest of an MCP tool definition, the listings a
// server answers, the signed in-toto statement and the bundle that carries
// it, and the differences between two definitions.
//
// The package does no I/O. Documents are read under the strict JSON
// profile of package strictjson. Statements are signed in package sign and
// verified in package verify against the trust policy of package trust;
// package release compares a release with the previous one. Every format here is specified byte-exactly in
// SPEC.md; the section numbers in the comments refer to it.
package etdi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/etdi-dev/etdi/strictjson"
)

// Media types and URIs of the signed format (SPEC.md §5, §6).
const (
	// PayloadType is the DSSE payloadType of every etdi envelope.
	PayloadType = "application/vnd.in-toto+json"
	// StatementType is the in-toto Statement v1 _type.
	StatementType = "https://in-toto.io/Statement/v1"
	// PredicateType identifies the etdi tool manifest predicate.
	PredicateType = "https://etdi.dev/ToolManifest/v1"
	// BundleMediaType is the mediaType of an etdi bundle file.
	BundleMediaType = "application/vnd.etdi.bundle.v1+json"
	// MetaPrefix is the _meta key prefix reserved for etdi material inside
	// MCP objects. Keys with this prefix are removed before digesting.
	MetaPrefix = "dev.etdi/"
)

// Size limits (SPEC.md §2).
const (
	MaxManifestSize = 64 << 20 // bytes of a manifest, bundle or tools/list file
	MaxTools        = 20000    // tools in one manifest or tools/list result
	MaxPermissions  = 256      // permissions of one tool
	MaxNameLen      = 256      // bytes of a tool name
	// MaxDefinitionNodes is the most JSON values one tool definition may
	// hold. Real definitions hold tens to a few thousand.
	MaxDefinitionNodes = 50_000
)

// Provider identifies who publishes and signs tools.
type Provider struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// Server identifies the MCP server the tools belong to, and optionally
// binds the bundle to where it is served from (SPEC.md §4.1): the URLs of
// a remote server, or what a stdio server is made of.
type Server struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// RegistryName is the server's name in MCP registries,
	// NAMESPACE/NAME (server.json's name, e.g. io.github.acme/weather); a
	// bundle checked for a registry entry of another name is
	// impersonation. Empty when the provider did not publish it there.
	RegistryName string `json:"registryName,omitempty"`
	// Endpoints are URL prefixes (scheme, host, port, path prefix) the
	// server is served from; see Covers.
	Endpoints []string `json:"endpoints,omitempty"`
	// Artifacts are what a stdio server is made of.
	Artifacts []Artifact `json:"artifacts,omitempty"`
}

// Artifact is one component of a stdio server: an npm or PyPI package, an
// OCI image or a file (SPEC.md §4.1), as server.artifacts in a manifest or
// statement names it. [ValidateArtifact] checks one.
type Artifact struct {
	// Type is ArtifactNPM, ArtifactPyPI, ArtifactOCI or ArtifactFile.
	Type string `json:"type"`
	// Name is the npm package, the Python distribution, the image without
	// tag or digest, or the file's base name.
	Name string `json:"name"`
	// Version is the package version or the image tag; a file has none.
	Version string `json:"version,omitempty"`
	// Digest is the registry's integrity string (SRI) for npm, and
	// "sha256:" and 64 lowercase hex digits otherwise: of one of the
	// distribution's files, of the image manifest, of the file's content.
	Digest string `json:"digest"`
}

// Bound reports whether the server names endpoints or artifacts.
func (s *Server) Bound() bool { return len(s.Endpoints) > 0 || len(s.Artifacts) > 0 }

// Permission is one capability a tool declares it needs.
type Permission struct {
	Scope       string `json:"scope"`
	Description string `json:"description,omitempty"`
}

// Tool is one versioned tool: its MCP definition plus the etdi fields.
type Tool struct {
	Name        string
	Version     string
	Permissions []Permission
	// Canonical is the RFC 8785 form of the MCP tool object, with etdi's
	// own _meta material removed (see StripMeta). Digest is its SHA-256.
	Canonical []byte
	Digest    Digest
}

// Definition parses the stored definition; used to show differences.
func (t *Tool) Definition() *strictjson.Value { return mustParseCanonical(t.Canonical) }

func mustParseCanonical(b []byte) *strictjson.Value {
	v, err := strictjson.Parse(b)
	if err != nil {
		panic("etdi: stored canonical definition does not parse: " + err.Error())
	}
	return v
}

// Manifest is what a provider writes and signs (SPEC.md §4).
type Manifest struct {
	Provider Provider
	Server   Server
	Tools    []Tool
}

// Tool returns the tool named name, or nil.
func (m *Manifest) Tool(name string) *Tool {
	for i := range m.Tools {
		if m.Tools[i].Name == name {
			return &m.Tools[i]
		}
	}
	return nil
}

// Digest is a SHA-256 content digest.
type Digest [sha256.Size]byte

// String returns "sha256:" followed by the lowercase hex digest.
func (d Digest) String() string { return "sha256:" + d.Hex() }

// Hex returns the lowercase hex digest.
func (d Digest) Hex() string { return hex.EncodeToString(d[:]) }

// Short returns the first 12 hex digits, for display.
func (d Digest) Short() string { return d.Hex()[:12] }

// MarshalText encodes the digest as its [Digest.String] form.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// ParseDigest parses "sha256:<64 hex>" or bare 64 lowercase hex digits.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	h := strings.TrimPrefix(s, "sha256:")
	if len(h) != 2*sha256.Size || strings.ToLower(h) != h {
		return d, fmt.Errorf("invalid sha256 digest %q", truncate(s, 80))
	}
	if _, err := hex.Decode(d[:], []byte(h)); err != nil {
		return d, fmt.Errorf("invalid sha256 digest %q", truncate(s, 80))
	}
	return d, nil
}

// StripMeta returns def without etdi's own material: every _meta member
// whose name starts with [MetaPrefix] is removed, and _meta itself is removed
// if that leaves it empty. def is not modified. Nothing else is touched
// (SPEC.md §3).
func StripMeta(def *strictjson.Value) *strictjson.Value {
	if def == nil || def.Kind != strictjson.Object {
		return def
	}
	meta := def.Get("_meta")
	if meta == nil || meta.Kind != strictjson.Object {
		return def
	}
	var kept []strictjson.Member
	removed := false
	for _, m := range meta.Members {
		if strings.HasPrefix(m.Name, MetaPrefix) {
			removed = true
			continue
		}
		kept = append(kept, m)
	}
	if !removed {
		return def
	}
	out := &strictjson.Value{Kind: strictjson.Object, Members: make([]strictjson.Member, 0, len(def.Members))}
	for _, m := range def.Members {
		if m.Name == "_meta" {
			if len(kept) == 0 {
				continue
			}
			m = strictjson.Member{Name: "_meta", Value: &strictjson.Value{Kind: strictjson.Object, Members: kept}}
		}
		out.Members = append(out.Members, m)
	}
	return out
}

// DefinitionDigest is the SHA-256 of the RFC 8785 canonical form of an MCP
// tool object after [StripMeta] (SPEC.md §3). Every other member counts.
func DefinitionDigest(def *strictjson.Value) Digest {
	_, d := canonicalDefinition(def)
	return d
}

// canonicalDefinition returns the canonical form of def after StripMeta,
// and its digest.
func canonicalDefinition(def *strictjson.Value) ([]byte, Digest) {
	// Made in a scratch buffer and copied once at its size: appending to
	// nil would allocate every doubling, and keep up to twice the size.
	bp := canonicalScratch.Get().(*[]byte)
	b := strictjson.AppendCanonical((*bp)[:0], StripMeta(def))
	c := bytes.Clone(b)
	if cap(b) <= 1<<20 {
		*bp = b
		canonicalScratch.Put(bp)
	}
	return c, sha256.Sum256(c)
}

// canonicalScratch holds buffers of at most 1 MiB for canonicalDefinition.
var canonicalScratch = sync.Pool{New: func() any { return new([]byte) }}

// DigestString returns the SHA-256 of a string's UTF-8 bytes.
func DigestString(s string) Digest { return sha256.Sum256([]byte(s)) }

// DigestJSON parses one MCP tool object under the strict profile and returns
// its definition digest.
func DigestJSON(data []byte) (Digest, error) {
	v, err := strictjson.Parse(data)
	if err != nil {
		return Digest{}, err
	}
	if v.Kind != strictjson.Object {
		return Digest{}, fmt.Errorf("tool definition is a %s, not an object", v.Kind)
	}
	return DefinitionDigest(v), nil
}

// ParseManifest parses and validates a manifest (SPEC.md §4). Every error
// names the place in the document, e.g. "tools[2].version".
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("manifest larger than %d bytes", MaxManifestSize)
	}
	tc := newToolsCollector("tools", false)
	v, err := strictjson.ParseStream(data, tc.hook("tools"))
	if err != nil {
		return nil, err
	}
	o, err := strictjson.Root(v).Object()
	if err != nil {
		return nil, err
	}
	if err := o.Only("provider", "server", "tools"); err != nil {
		return nil, err
	}
	m := &Manifest{}
	if m.Provider, err = parseProvider(o.Field("provider")); err != nil {
		return nil, err
	}
	if m.Server, err = parseServer(o.Field("server")); err != nil {
		return nil, err
	}
	if m.Tools, err = tc.finish(o.Field("tools")); err != nil {
		return nil, err
	}
	return m, nil
}

func parseProvider(f strictjson.Field) (Provider, error) {
	var p Provider
	o, err := f.Object()
	if err != nil {
		return p, err
	}
	if err := o.Only("id", "name"); err != nil {
		return p, err
	}
	if p.ID, err = o.Field("id").Str(); err != nil {
		return p, err
	}
	if err := ValidateProviderID(p.ID); err != nil {
		return p, o.Field("id").Errorf("%v", err)
	}
	if p.Name, err = o.Field("name").OptStr(); err != nil {
		return p, err
	}
	if err := checkText(p.Name, 256); err != nil {
		return p, o.Field("name").Errorf("%v", err)
	}
	return p, nil
}

func parseServer(f strictjson.Field) (Server, error) {
	var s Server
	o, err := f.Object()
	if err != nil {
		return s, err
	}
	if err := o.Only("name", "version", "registryName", "endpoints", "artifacts"); err != nil {
		return s, err
	}
	if s.RegistryName, err = o.Field("registryName").OptStr(); err != nil {
		return s, err
	}
	if o.Field("registryName").V != nil {
		if err := ValidateRegistryName(s.RegistryName); err != nil {
			return s, o.Field("registryName").Errorf("%v", err)
		}
	}
	if s.Endpoints, err = parseEndpoints(o.Field("endpoints")); err != nil {
		return s, err
	}
	if s.Artifacts, err = parseArtifacts(o.Field("artifacts")); err != nil {
		return s, err
	}
	if s.Name, err = o.Field("name").Str(); err != nil {
		return s, err
	}
	if s.Name == "" {
		return s, o.Field("name").Errorf("must not be empty")
	}
	if err := checkText(s.Name, 256); err != nil {
		return s, o.Field("name").Errorf("%v", err)
	}
	if s.Version, err = o.Field("version").OptStr(); err != nil {
		return s, err
	}
	if err := checkText(s.Version, 128); err != nil {
		return s, o.Field("version").Errorf("%v", err)
	}
	return s, nil
}

// toolsCollector parses the entries of a tools array one at a time, as the
// parser streams them: manifest entries are {version, permissions,
// definition}; predicate entries also carry name.
type toolsCollector struct {
	path        string
	inPredicate bool
	tools       []Tool
	seen        map[string]int
}

func newToolsCollector(path string, inPredicate bool) *toolsCollector {
	return &toolsCollector{path: path, inPredicate: inPredicate, seen: map[string]int{}}
}

func (c *toolsCollector) hook(path ...string) *strictjson.Stream {
	return definitions([][]string{path}, func(_, i int, v *strictjson.Value) error { return c.add(i, v) })
}

// definitions streams the arrays at paths, whose elements are tool
// definitions (or list entries digested like them): each may hold at most
// MaxDefinitionNodes JSON values.
func definitions(paths [][]string, each func(path, index int, v *strictjson.Value) error) *strictjson.Stream {
	return &strictjson.Stream{Paths: paths, Each: each, MaxElemNodes: MaxDefinitionNodes, ElemName: "the tool definition"}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// finish checks the tools field itself once the document is parsed.
func (c *toolsCollector) finish(f strictjson.Field) ([]Tool, error) {
	if _, err := f.Array(); err != nil {
		return nil, err
	}
	if len(c.tools) == 0 {
		return nil, f.Errorf("must list at least one tool")
	}
	return c.tools, nil
}

func (c *toolsCollector) add(i int, v *strictjson.Value) error {
	if i >= MaxTools {
		return &strictjson.FieldError{Path: c.path, Msg: fmt.Sprintf("more than %d tools", MaxTools)}
	}
	ef := strictjson.Field{Path: c.path + "[" + strconv.Itoa(i) + "]", V: v}
	o, err := ef.Object()
	if err != nil {
		return err
	}
	allowed := []string{"version", "permissions", "definition"}
	if c.inPredicate {
		allowed = append(allowed, "name")
	}
	if err := o.Only(allowed...); err != nil {
		return err
	}
	var t Tool
	df := o.Field("definition")
	def, err := df.Object()
	if err != nil {
		return err
	}
	if t.Name, err = def.Field("name").Str(); err != nil {
		return err
	}
	t.Name = strings.Clone(t.Name) // do not keep the whole document alive
	if err := ValidateToolName(t.Name); err != nil {
		return def.Field("name").Errorf("%v", err)
	}
	if c.inPredicate {
		n, err := o.Field("name").Str()
		if err != nil {
			return err
		}
		if n != t.Name {
			return o.Field("name").Errorf("%q does not match definition.name %q", n, t.Name)
		}
	}
	if j, dup := c.seen[t.Name]; dup {
		return def.Field("name").Errorf("duplicate tool name %q (also %s[%d])", t.Name, c.path, j)
	}
	c.seen[t.Name] = i
	if t.Version, err = o.Field("version").Str(); err != nil {
		return err
	}
	t.Version = strings.Clone(t.Version)
	if _, err := ParseVersion(t.Version); err != nil {
		return o.Field("version").Errorf("%v", err)
	}
	if t.Permissions, err = parsePermissions(o.Field("permissions")); err != nil {
		return err
	}
	t.Canonical, t.Digest = canonicalDefinition(def.V)
	c.tools = append(c.tools, t)
	return nil
}

func parsePermissions(f strictjson.Field) ([]Permission, error) {
	a, err := f.Array()
	if err != nil {
		return nil, err
	}
	if len(a.V.Elems) > MaxPermissions {
		return nil, f.Errorf("more than %d permissions", MaxPermissions)
	}
	perms := make([]Permission, 0, len(a.V.Elems))
	seen := map[string]bool{}
	for i := range a.V.Elems {
		o, err := a.Elem(i).Object()
		if err != nil {
			return nil, err
		}
		if err := o.Only("scope", "description"); err != nil {
			return nil, err
		}
		var p Permission
		if p.Scope, err = o.Field("scope").Str(); err != nil {
			return nil, err
		}
		p.Scope = strings.Clone(p.Scope)
		if err := ValidateScope(p.Scope); err != nil {
			return nil, o.Field("scope").Errorf("%v", err)
		}
		if seen[p.Scope] {
			return nil, o.Field("scope").Errorf("duplicate scope %q", p.Scope)
		}
		seen[p.Scope] = true
		if p.Description, err = o.Field("description").OptStr(); err != nil {
			return nil, err
		}
		p.Description = strings.Clone(p.Description)
		if err := checkText(p.Description, 1024); err != nil {
			return nil, o.Field("description").Errorf("%v", err)
		}
		perms = append(perms, p)
	}
	return perms, nil
}

// ValidateProviderID reports whether id is an acceptable provider id:
// 1 to 128 ASCII letters, digits, '.', '_' or '-', starting with a letter or
// digit. ASCII-only so that two ids can never look alike.
func ValidateProviderID(id string) error {
	if id == "" {
		return fmt.Errorf("provider id must not be empty")
	}
	if len(id) > 128 {
		return fmt.Errorf("provider id longer than 128 bytes")
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			i > 0 && (c == '.' || c == '_' || c == '-')
		if !ok {
			return fmt.Errorf("provider id %q: only ASCII letters, digits, '.', '_', '-' allowed, starting with a letter or digit", id)
		}
	}
	return nil
}

// ValidateToolName reports whether name is acceptable as a signed tool name:
// 1 to [MaxNameLen] bytes without control characters or spaces.
func ValidateToolName(name string) error {
	if name == "" {
		return fmt.Errorf("tool name must not be empty")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("tool name longer than %d bytes", MaxNameLen)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == ' ' || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("tool name %q contains a control character or space", name)
		}
	}
	return nil
}

// ValidateScope reports whether s is an acceptable permission scope: 1 to
// 128 printable ASCII characters without spaces, e.g. "net:fetch".
func ValidateScope(s string) error {
	if s == "" {
		return fmt.Errorf("scope must not be empty")
	}
	if len(s) > 128 {
		return fmt.Errorf("scope longer than 128 bytes")
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return fmt.Errorf("scope %q: only printable ASCII without spaces allowed", s)
		}
	}
	return nil
}

func checkText(s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("longer than %d bytes", max)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("contains a control character")
		}
	}
	return nil
}
