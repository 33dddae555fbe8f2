// Package trust is the client's trust policy: which providers are trusted,
// with which public keys and validity windows, and what to do with tools
// that carry no signature (SPEC.md §9).
//
// A key is trusted only for the provider it is listed under: a signature by
// a key of provider B never makes a bundle that claims provider A valid.
package trust

import (
	"bytes"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/atomicfile"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/strictjson"
	"github.com/sigstore/sigstore-go/pkg/root"
)

// FormatVersion is the only policy "version" this package reads and writes.
const FormatVersion = 1

// UnsignedRule says what happens to a tool that no bundle signs.
type UnsignedRule string

// The unsigned rules.
const (
	Allow UnsignedRule = "allow" // accepted silently (still pinned by digest)
	Warn  UnsignedRule = "warn"  // accepted with a warning
	Block UnsignedRule = "block" // refused (exit 10); the default
)

// UpdateRule says what happens when what an unsigned server runs changes
// (a new package version, an edited local file) and the definitions it
// serves stay approved: the server_updated finding (SPEC.md §9).
type UpdateRule string

// The update rules.
const (
	// UpdateAsk: approval required at check (exit 13); the gate starts
	// the server and relays the unchanged definitions with a notice. The
	// default.
	UpdateAsk UpdateRule = "ask"
	// UpdateAllow: accepted everywhere with a notice; nothing is recorded
	// until the update is approved.
	UpdateAllow UpdateRule = "allow"
	// UpdateBlock: an error at check (exit 11); the gate does not start
	// the server.
	UpdateBlock UpdateRule = "block"
)

// ParseUpdateRule parses "allow", "ask" or "block".
func ParseUpdateRule(s string) (UpdateRule, error) {
	switch r := UpdateRule(s); r {
	case UpdateAllow, UpdateAsk, UpdateBlock:
		return r, nil
	}
	return "", fmt.Errorf("update rule %q is not allow, ask or block", s)
}

// OnUpdate is the policy's update rule for unsigned servers: [UpdateAsk]
// when the policy sets none.
func (p *Policy) OnUpdate() UpdateRule {
	if p == nil || p.UnsignedUpdate == "" {
		return UpdateAsk
	}
	return p.UnsignedUpdate
}

// ArtifactRule says what happens when a bundle names the artifacts of a
// stdio server and etdi cannot resolve what the command it is about to
// start runs (SPEC.md §4.1).
type ArtifactRule string

// The artifact rules.
const (
	ArtifactsRequire ArtifactRule = "require" // an error (exit 12)
	ArtifactsWarn    ArtifactRule = "warn"    // a warning; the default
	ArtifactsIgnore  ArtifactRule = "ignore"  // information only
)

// ParseArtifactRule parses "require", "warn" or "ignore".
func ParseArtifactRule(s string) (ArtifactRule, error) {
	switch r := ArtifactRule(s); r {
	case ArtifactsRequire, ArtifactsWarn, ArtifactsIgnore:
		return r, nil
	}
	return "", fmt.Errorf("artifacts rule %q is not require, warn or ignore", s)
}

// Policy is a parsed trust policy.
type Policy struct {
	Unsigned UnsignedRule
	// UnsignedUpdate is the update rule of unsigned servers; empty means
	// UpdateAsk (see OnUpdate).
	UnsignedUpdate UpdateRule
	// Artifacts is the rule for artifacts that cannot be resolved; empty
	// means ArtifactsWarn.
	Artifacts ArtifactRule
	Providers []Provider
	// Cedar are the call-time policy files (docs/policies.md#call-time-policies) as written: a
	// relative path is relative to the trust policy's directory (see
	// CedarFiles).
	Cedar []string
	// SigstoreRoots are the Sigstore trusted roots (trusted_root.json
	// documents) that keyless signatures chain to (SPEC.md §16), kept in
	// the policy so that verification works offline.
	SigstoreRoots []SigstoreRoot
	// SigstoreRootSource says where SigstoreRoots came from when they were
	// fetched through TUF ('etdi trust sigstore-root --update'); nil when
	// they were given as a file.
	SigstoreRootSource *SigstoreRootSource
}

// SigstoreRootSource records the TUF repository a policy's Sigstore
// trusted roots were fetched and verified from (SPEC.md §16.2). It is a
// record for the person who reviews the policy: verification never reads it.
type SigstoreRootSource struct {
	// Mirror is the TUF repository's base URL.
	Mirror string
	// TUFRoot is "sha256:HEX" of the TUF root (root.json) the update
	// started from: the one sigstore-go embeds for the public-good
	// instance, or the file given with --tuf-root.
	TUFRoot string
	// Fetched is when the target was fetched and verified.
	Fetched time.Time
}

// CheckSigstoreRootSource validates a source record.
func CheckSigstoreRootSource(s SigstoreRootSource) error {
	u, err := url.Parse(s.Mirror)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || !etdi.SecureURL(u) || len(s.Mirror) > 2048 {
		return fmt.Errorf("TUF mirror %q is not an https URL (http only on a loopback address)", s.Mirror)
	}
	if !sha256Digest().MatchString(s.TUFRoot) {
		return fmt.Errorf("TUF root digest %q is not sha256:HEX", s.TUFRoot)
	}
	if s.Fetched.IsZero() {
		return errors.New("no fetch time")
	}
	return nil
}

var sha256Digest = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })

// SigstoreRoot is one Sigstore trusted root: its canonical JSON as kept
// in the policy, and the material parsed from it.
type SigstoreRoot struct {
	JSON []byte
	Root *root.TrustedRoot
}

// MaxSigstoreRoots bounds the trusted roots a policy holds.
const MaxSigstoreRoots = 8

// ParseSigstoreRoots reads one trusted_root.json document, or several:
// a JSON array of them, or one per line (as 'gh attestation
// trusted-root' prints them).
func ParseSigstoreRoots(data []byte) ([]SigstoreRoot, error) {
	var docs []*strictjson.Value
	if v, err := strictjson.Parse(data); err == nil {
		if v.Kind == strictjson.Array {
			docs = v.Elems
		} else {
			docs = []*strictjson.Value{v}
		}
	} else {
		for i, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			v, lerr := strictjson.Parse(line)
			if lerr != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, lerr)
			}
			docs = append(docs, v)
		}
	}
	if len(docs) == 0 {
		return nil, errors.New("no trusted root")
	}
	if len(docs) > MaxSigstoreRoots {
		return nil, fmt.Errorf("more than %d trusted roots", MaxSigstoreRoots)
	}
	var out []SigstoreRoot
	for i, d := range docs {
		r, err := parseSigstoreRoot(strictjson.Field{Path: fmt.Sprintf("[%d]", i), V: d})
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func parseSigstoreRoot(f strictjson.Field) (SigstoreRoot, error) {
	if _, err := f.Object(); err != nil {
		return SigstoreRoot{}, err
	}
	doc := strictjson.AppendCanonical(nil, f.V)
	tr, err := root.NewTrustedRootFromJSON(doc)
	if err != nil {
		return SigstoreRoot{}, f.Errorf("not a Sigstore trusted root: %v", err)
	}
	if len(tr.FulcioCertificateAuthorities()) == 0 {
		return SigstoreRoot{}, f.Errorf("trusted root has no certificate authority")
	}
	if len(tr.RekorLogs()) == 0 {
		return SigstoreRoot{}, f.Errorf("trusted root has no transparency log")
	}
	return SigstoreRoot{JSON: doc, Root: tr}, nil
}

// SigstoreMaterial returns the policy's trusted roots as one set of
// trusted material, or nil when it has none.
func (p *Policy) SigstoreMaterial() root.TrustedMaterial {
	if len(p.SigstoreRoots) == 0 {
		return nil
	}
	var c root.TrustedMaterialCollection
	for _, r := range p.SigstoreRoots {
		c = append(c, r.Root)
	}
	return c
}

// MaxCedarFiles bounds the policy files a trust policy names.
const MaxCedarFiles = 16

// CedarFiles returns the call-time policy files of a trust policy loaded
// from path, relative ones resolved against its directory: the files
// travel with the trust policy, wherever it is used from.
func (p *Policy) CedarFiles(path string) []string {
	out := make([]string, 0, len(p.Cedar))
	for _, f := range p.Cedar {
		if !filepath.IsAbs(f) {
			f = filepath.Join(filepath.Dir(path), f)
		}
		out = append(out, f)
	}
	return out
}

// ArtifactRule returns the artifact rule in force (warn by default).
func (p *Policy) ArtifactRule() ArtifactRule {
	if p.Artifacts == "" {
		return ArtifactsWarn
	}
	return p.Artifacts
}

// Provider is one trusted provider: its keys and keyless signers, its
// identity provider, and which of the two a bundle must satisfy.
type Provider struct {
	ID   string
	Keys []Key
	// Sigstore are the keyless signers trusted for the provider. For the
	// require rule they count as keys: "key" means a signature by a
	// trusted key or a trusted keyless signer.
	Sigstore []SigstoreIdentity
	IDP      *IDP
	// Require is RequireKey, RequireIDP, RequireBoth or RequireAny; empty
	// means the default (see EffectiveRequire).
	Require string
	// RegistryNamespaces are the MCP registry namespaces the provider
	// publishes under (io.github.acme, com.acme.mcp); empty means the
	// policy says nothing of them. A bundle of the provider checked for a
	// registry name outside them is impersonation ([Provider.CoversRegistryName],
	// SPEC.md §4.2).
	RegistryNamespaces []string
}

// Require rules.
const (
	RequireKey  = "key"  // a signature by a trusted key
	RequireIDP  = "idp"  // a valid token from the identity provider
	RequireBoth = "both" // both
	RequireAny  = "any"  // either
)

// EffectiveRequire returns the rule in force: the configured one, else
// "both" when keys and an identity provider are configured, else whichever
// is configured.
func (p *Provider) EffectiveRequire() string {
	if p.Require != "" {
		return p.Require
	}
	switch {
	case p.HasSigners() && p.IDP != nil:
		return RequireBoth
	case p.IDP != nil:
		return RequireIDP
	}
	return RequireKey
}

// HasSigners reports whether the provider trusts a key or a keyless
// signer.
func (p *Provider) HasSigners() bool { return len(p.Keys) > 0 || len(p.Sigstore) > 0 }

// SigstoreIdentity is a keyless signer (SPEC.md §16.2): the OIDC issuer
// that vouched for the signer's identity, that identity (the certificate's
// subject alternative name), given exactly or as a pattern, and the source
// repository the certificate must name.
type SigstoreIdentity struct {
	Issuer string
	// Identity is the exact identity; IdentityPattern a regular
	// expression (RE2) that must match the whole identity. One of the
	// two is set.
	Identity        string
	IdentityPattern string
	// Repository, if set, is the source repository the certificate must
	// name (Fulcio's extension 1.3.6.1.4.1.57264.1.12), exactly. Without
	// it, a GitHub Actions certificate must name the repository of its
	// own workflow: a reusable workflow called from another repository
	// gets a certificate with the workflow's identity, and only the
	// source repository tells the caller.
	Repository string
	// GitHub declares the issuer a GitHub Actions issuer that
	// IsGitHubIssuer does not recognise by its form (a GitHub Enterprise
	// Server behind another URL): the rules of GitHub signers apply.
	GitHub bool
}

// GitHubIssuer is the OIDC issuer of GitHub Actions' job tokens.
const GitHubIssuer = "https://token.actions.githubusercontent.com"

// IsGitHubIssuer reports whether iss is a GitHub Actions issuer by its
// form: the public one; a GitHub Enterprise Cloud issuer under it
// (https://token.actions.githubusercontent.com/<enterprise>); GitHub
// Enterprise Cloud with data residency (https://token.actions.<subdomain>.ghe.com);
// or GitHub Enterprise Server (https://<host>/_services/token).
func IsGitHubIssuer(iss string) bool {
	if iss == GitHubIssuer || strings.HasPrefix(iss, GitHubIssuer+"/") {
		return true
	}
	u, err := url.Parse(iss)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if strings.HasPrefix(host, "token.actions.") && strings.HasSuffix(host, ".ghe.com") && u.Path == "" {
		return true
	}
	return strings.TrimSuffix(u.Path, "/") == "/_services/token"
}

// IsGitHub reports whether s is a GitHub Actions signer: its issuer is
// one by its form ([IsGitHubIssuer]) or the entry declares it (GitHub).
func (s SigstoreIdentity) IsGitHub() bool { return s.GitHub || IsGitHubIssuer(s.Issuer) }

// String names the signer as the pin database records it. Its fields hold
// no white space and an exact identity never begins with "~" (see
// [CheckSigstoreIdentity]), so two entries never share a name.
func (s SigstoreIdentity) String() string {
	out := s.Issuer + " " + s.Identity
	if s.IdentityPattern != "" {
		out = s.Issuer + " ~" + s.IdentityPattern
	}
	if s.Repository != "" {
		out += " repository=" + s.Repository
	}
	if s.GitHub {
		out += " github"
	}
	return out
}

// repoURL matches the beginning of a GitHub identity: https://HOST/OWNER/REPO/,
// each part non-empty.
var repoURL = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^https://[^/@?#]+/[^/]+/[^/]+/`) })

// identityRepository is the repository URL a GitHub identity names
// (https://HOST/OWNER/REPO of https://HOST/OWNER/REPO/.github/workflows/...),
// "" when it names none.
func identityRepository(id string) string {
	m := repoURL().FindString(id)
	return strings.TrimSuffix(m, "/")
}

// Matches reports whether a certificate issued for an OIDC token of issuer
// iss, naming identity id and source repository repo, is this signer.
// For a GitHub signer without Repository, the certificate's source
// repository must be exactly the repository the identity names: a
// reusable workflow called from another repository gets a certificate
// with the workflow's identity and the caller's repository.
func (s SigstoreIdentity) Matches(iss, id, repo string) bool {
	if iss != s.Issuer {
		return false
	}
	if s.IdentityPattern == "" {
		if id != s.Identity {
			return false
		}
	} else if re, err := compilePattern(s.IdentityPattern); err != nil || !re.MatchString(id) {
		return false
	} else if s.IsGitHub() && CheckGitHubPattern(s.IdentityPattern) != nil {
		return false // an entry never checked (not from a policy or AddSigstore)
	}
	switch {
	case s.Repository != "":
		return repo == s.Repository
	case s.IsGitHub():
		want := identityRepository(id)
		return want != "" && repo == want
	}
	return true
}

// CheckGitHubPattern refuses an identity pattern of a GitHub signer that
// leaves the owner or the repository open: every identity it matches
// must begin with the same https://HOST/OWNER/REPO/, written literally
// (no class, wildcard, alternation or case folding there). Otherwise a
// pattern such as https://github\.com/[^/]+/weather/... trusts every
// owner's weather repository.
func CheckGitHubPattern(pattern string) error {
	re, err := compilePattern(pattern)
	if err != nil {
		return fmt.Errorf("identity pattern: %v", err)
	}
	prefix, _ := re.LiteralPrefix()
	if !repoURL().MatchString(prefix) {
		return fmt.Errorf("identity pattern %q leaves the owner or the repository open: a GitHub identity pattern must begin with "+
			"https://HOST/OWNER/REPO/ written literally (escape dots: https://github\\.com/acme/weather/\\.github/workflows/release\\.yml@refs/tags/v.*); "+
			"trust several repositories with one entry each", pattern)
	}
	return nil
}

// compilePattern compiles pattern on its own, then anchored at both ends:
// a pattern that matched a part of an identity would trust every identity
// containing it, and one that is not a regular expression by itself (an
// unbalanced parenthesis) could close the anchoring group early.
func compilePattern(pattern string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(pattern); err != nil {
		return nil, err
	}
	return regexp.Compile(`^(?:` + pattern + `)$`)
}

// strangers are identities no trust entry should match: a pattern that
// matches one trusts anyone.
var strangers = []string{
	"", "x", "mallory@evil.example",
	"https://evil.example/x",
	"https://github.com/evil/tools/.github/workflows/x.yml@refs/heads/main",
	"https://gitlab.com/evil/tools//.gitlab-ci.yml@refs/heads/main",
}

// CheckSigstoreIdentity validates a keyless signer before it is trusted.
func CheckSigstoreIdentity(s SigstoreIdentity) error {
	if err := CheckIssuer(s.Issuer); err != nil {
		return err
	}
	for _, f := range []string{s.Issuer, s.Identity, s.IdentityPattern, s.Repository} {
		if strings.IndexFunc(f, unicode.IsSpace) >= 0 {
			return errors.New("white space in a keyless signer (write \\s in a pattern)")
		}
		if len(f) > 4096 {
			return errors.New("a keyless signer field longer than 4096 bytes")
		}
	}
	switch {
	case (s.Identity == "") == (s.IdentityPattern == ""):
		return errors.New("a keyless signer needs exactly one of an identity and an identity pattern")
	case strings.HasPrefix(s.Identity, "~"):
		return errors.New("an identity beginning with ~ reads as a pattern; is it one?")
	case s.IdentityPattern != "":
		re, err := compilePattern(s.IdentityPattern)
		if err != nil {
			return fmt.Errorf("identity pattern: %v", err)
		}
		for _, x := range strangers {
			if re.MatchString(x) {
				return fmt.Errorf("identity pattern %q matches %q: it would trust identities of anyone", s.IdentityPattern, x)
			}
		}
		if s.IsGitHub() {
			if err := CheckGitHubPattern(s.IdentityPattern); err != nil {
				return err
			}
		}
	}
	if s.Repository != "" {
		if u, err := url.Parse(s.Repository); err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("repository %q is not an https URL", s.Repository)
		}
		if s.IsGitHub() && identityRepository(s.Repository+"/") != s.Repository {
			return fmt.Errorf("repository %q is not a GitHub repository URL, https://HOST/OWNER/REPO", s.Repository)
		}
	}
	return nil
}

// AddSigstore trusts keyless signer s for provider id, creating the
// provider if needed. The policy must hold a trusted root.
func (p *Policy) AddSigstore(id string, s SigstoreIdentity) (added bool, err error) {
	if err := etdi.ValidateProviderID(id); err != nil {
		return false, err
	}
	if err := CheckSigstoreIdentity(s); err != nil {
		return false, err
	}
	if len(p.SigstoreRoots) == 0 {
		return false, errors.New("the policy has no Sigstore trusted root: fetch it with 'etdi trust sigstore-root --update' (or give one with --trusted-root FILE)")
	}
	prov := p.Provider(id)
	if prov == nil {
		p.Providers = append(p.Providers, Provider{ID: id})
		prov = &p.Providers[len(p.Providers)-1]
	}
	if slices.Contains(prov.Sigstore, s) {
		return false, nil
	}
	prov.Sigstore = append(prov.Sigstore, s)
	return true, nil
}

// IDP says how tokens from a provider's identity provider are verified
// (SPEC.md §13).
type IDP struct {
	// Issuer is the exact iss claim; OIDC discovery is done at
	// Issuer/.well-known/openid-configuration unless JWKS is pinned.
	Issuer   string
	Audience string
	// Subjects are the accepted values of SubjectClaim (default "sub").
	Subjects     []string
	SubjectClaim string
	// JWKS, if set, is a pinned key set (JSON) used offline instead of
	// discovery.
	JWKS []byte
	// Introspection, if set, is checked for every token (RFC 7662).
	Introspection *Introspection
	// DenyJTI and DenySubjects refuse tokens by id or subject.
	DenyJTI      []string
	DenySubjects []string
}

// Introspection is an RFC 7662 endpoint and the client that may call it;
// the secret is read from an environment variable, never stored.
type Introspection struct {
	Endpoint        string
	ClientID        string
	ClientSecretEnv string
}

// Key is a trusted public key with an optional validity window.
type Key struct {
	ID        string // keys.ID of PublicKey
	PublicKey crypto.PublicKey
	NotBefore time.Time // zero: no lower bound
	NotAfter  time.Time // zero: no upper bound
}

// WindowError reports a key used outside its validity window.
type WindowError struct {
	KeyID     string
	NotBefore time.Time
	NotAfter  time.Time
	At        time.Time
}

func (e *WindowError) Error() string {
	if !e.NotBefore.IsZero() && e.At.Before(e.NotBefore) {
		return fmt.Sprintf("key %s is not valid before %s", keys.ShortID(e.KeyID), e.NotBefore.Format(time.RFC3339))
	}
	return fmt.Sprintf("key %s expired at %s", keys.ShortID(e.KeyID), e.NotAfter.Format(time.RFC3339))
}

// NotYetValid reports whether the window starts after At.
func (e *WindowError) NotYetValid() bool {
	return !e.NotBefore.IsZero() && e.At.Before(e.NotBefore)
}

// ValidAt returns a [*WindowError] if t is outside the key's window.
func (k *Key) ValidAt(t time.Time) error {
	if (!k.NotBefore.IsZero() && t.Before(k.NotBefore)) || (!k.NotAfter.IsZero() && t.After(k.NotAfter)) {
		return &WindowError{KeyID: k.ID, NotBefore: k.NotBefore, NotAfter: k.NotAfter, At: t}
	}
	return nil
}

// New returns an empty policy that blocks unsigned tools.
func New() *Policy { return &Policy{Unsigned: Block} }

// Provider returns the provider with the given id, or nil.
func (p *Policy) Provider(id string) *Provider {
	for i := range p.Providers {
		if p.Providers[i].ID == id {
			return &p.Providers[i]
		}
	}
	return nil
}

// AddKey trusts k for provider id, creating the provider if needed. If the
// provider already has the key, its window is replaced and updated is true.
func (p *Policy) AddKey(id string, k Key) (updated bool, err error) {
	if err := etdi.ValidateProviderID(id); err != nil {
		return false, err
	}
	if err := keys.CheckPublicKey(k.PublicKey); err != nil {
		return false, err
	}
	if k.ID, err = keys.ID(k.PublicKey); err != nil {
		return false, err
	}
	if !k.NotBefore.IsZero() && !k.NotAfter.IsZero() && !k.NotAfter.After(k.NotBefore) {
		return false, fmt.Errorf("not-after %s is not after not-before %s", k.NotAfter.Format(time.RFC3339), k.NotBefore.Format(time.RFC3339))
	}
	prov := p.Provider(id)
	if prov == nil {
		p.Providers = append(p.Providers, Provider{ID: id})
		prov = &p.Providers[len(p.Providers)-1]
	}
	for i := range prov.Keys {
		if prov.Keys[i].ID == k.ID {
			prov.Keys[i] = k
			return true, nil
		}
	}
	prov.Keys = append(prov.Keys, k)
	return false, nil
}

// Remove removes key keyID from provider id, or the whole provider when
// keyID is empty. A provider left without keys is removed. keyID may be a
// unique prefix of at least 16 hex digits ([keys.ResolveID]).
func (p *Policy) Remove(id, keyID string) error {
	prov := p.Provider(id)
	if prov == nil {
		return fmt.Errorf("provider %q is not in the policy", id)
	}
	if keyID != "" {
		k, err := prov.findKey(keyID)
		if err != nil {
			return err
		}
		prov.Keys = slices.DeleteFunc(prov.Keys, func(x Key) bool { return x.ID == k.ID })
		if len(prov.Keys) > 0 {
			return nil
		}
	}
	p.Providers = slices.DeleteFunc(p.Providers, func(x Provider) bool { return x.ID == id })
	return nil
}

func (prov *Provider) findKey(ref string) (*Key, error) {
	ids := make([]string, len(prov.Keys))
	for i, k := range prov.Keys {
		ids[i] = k.ID
	}
	id, err := keys.ResolveID(ref, ids)
	if err != nil {
		return nil, fmt.Errorf("provider %q: %w", prov.ID, err)
	}
	for i := range prov.Keys {
		if prov.Keys[i].ID == id {
			return &prov.Keys[i], nil
		}
	}
	return nil, fmt.Errorf("provider %q has no key %q", prov.ID, ref)
}

// Parse reads a policy document strictly (SPEC.md §9): unknown fields,
// duplicate keys, key ids that do not match their key, refused algorithms
// and inverted windows are errors, so a typo never silently weakens it.
func Parse(data []byte) (*Policy, error) {
	if len(data) > 4<<20 {
		return nil, errors.New("trust policy larger than 4 MiB")
	}
	v, err := strictjson.Parse(data)
	if err != nil {
		return nil, err
	}
	o, err := strictjson.Root(v).Object()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(policyMembers))
	for i, m := range policyMembers {
		names[i] = m.name
	}
	if err := o.Only(names...); err != nil {
		return nil, err
	}
	p := &Policy{Unsigned: Block}
	for _, late := range []bool{false, true} {
		for _, m := range policyMembers {
			if m.late == late {
				if err := m.read(o.Field(m.name), p); err != nil {
					return nil, err
				}
			}
		}
	}
	return p, nil
}

// policyMember is one member of a trust policy document: its name, how
// it is decoded into a Policy (an absent optional member leaves the
// Policy as it is), and what it must agree with among the members
// decoded before it.
type policyMember struct {
	name     string
	decode   func(f strictjson.Field, p *Policy) error
	validate func(f strictjson.Field, p *Policy) error // nil: nothing to agree with
	// late members are read after all others, which they depend on.
	late bool
}

// read decodes and validates the member f.
func (m policyMember) read(f strictjson.Field, p *Policy) error {
	if err := m.decode(f, p); err != nil {
		return err
	}
	if m.validate != nil {
		return m.validate(f, p)
	}
	return nil
}

// policyMembers are the members of a trust policy document, in the order
// they are read (late ones last) and named in the error about an unknown
// member; the first member in error is the one reported.
var policyMembers = []policyMember{
	{name: "version", decode: decodeVersion},
	{name: "unsigned", decode: parseUnsigned},
	{name: "artifacts", decode: decodeArtifacts},
	// Providers that trust keyless signers need sigstoreTrustedRoots.
	{name: "providers", decode: decodeProviders, late: true},
	{name: "cedar", decode: decodeCedar},
	{name: "sigstoreTrustedRoots", decode: decodeSigstoreRoots},
	// A source is the source of roots the policy holds.
	{name: "sigstoreTrustedRootSource", decode: decodeSigstoreRootSource, validate: validateSigstoreRootSource},
}

func decodeVersion(f strictjson.Field, _ *Policy) error {
	ver, err := f.Uint()
	if err != nil {
		return err
	}
	if ver != FormatVersion {
		return f.Errorf("unsupported trust policy version %d (want %d)", ver, FormatVersion)
	}
	return nil
}

func decodeArtifacts(f strictjson.Field, p *Policy) error {
	a, err := f.OptStr()
	if err != nil || a == "" {
		return err
	}
	if p.Artifacts, err = ParseArtifactRule(a); err != nil {
		return f.Errorf("%v", err)
	}
	return nil
}

func decodeCedar(f strictjson.Field, p *Policy) error {
	if f.V == nil {
		return nil
	}
	ca, err := f.Array()
	if err != nil {
		return err
	}
	if ca.Len() > MaxCedarFiles {
		return ca.Errorf("more than %d policy files", MaxCedarFiles)
	}
	for i := 0; i < ca.Len(); i++ {
		name, err := ca.Elem(i).Str()
		if err != nil {
			return err
		}
		if name == "" || strings.ContainsRune(name, 0) || len(name) > 4096 {
			return ca.Elem(i).Errorf("not a file path")
		}
		if slices.Contains(p.Cedar, name) {
			return ca.Elem(i).Errorf("%q listed twice", name)
		}
		p.Cedar = append(p.Cedar, name)
	}
	return nil
}

func decodeSigstoreRoots(f strictjson.Field, p *Policy) error {
	if f.V == nil {
		return nil
	}
	ra, err := f.Array()
	if err != nil {
		return err
	}
	if ra.Len() == 0 || ra.Len() > MaxSigstoreRoots {
		return ra.Errorf("must hold 1 to %d trusted roots", MaxSigstoreRoots)
	}
	for i := 0; i < ra.Len(); i++ {
		r, err := parseSigstoreRoot(ra.Elem(i))
		if err != nil {
			return err
		}
		p.SigstoreRoots = append(p.SigstoreRoots, r)
	}
	return nil
}

func decodeSigstoreRootSource(f strictjson.Field, p *Policy) (err error) {
	if f.V != nil {
		p.SigstoreRootSource, err = parseSigstoreRootSource(f)
	}
	return err
}

// validateSigstoreRootSource refuses a source of roots the policy does
// not hold.
func validateSigstoreRootSource(f strictjson.Field, p *Policy) error {
	if f.V != nil && len(p.SigstoreRoots) == 0 {
		return f.Errorf("a source without sigstoreTrustedRoots")
	}
	return nil
}

func decodeProviders(f strictjson.Field, p *Policy) error {
	pa, err := f.Array()
	if err != nil {
		return err
	}
	for i := 0; i < pa.Len(); i++ {
		prov, err := parseProvider(pa.Elem(i), p)
		if err != nil {
			return err
		}
		p.Providers = append(p.Providers, prov)
	}
	return nil
}

// parseProvider reads one provider of p's providers (p holds those
// before it and the Sigstore roots), member by member as providerMembers
// says.
func parseProvider(f strictjson.Field, p *Policy) (Provider, error) {
	var prov Provider
	po, err := f.Object()
	if err != nil {
		return prov, err
	}
	names := make([]string, len(providerMembers))
	for i, m := range providerMembers {
		names[i] = m.name
	}
	if err := po.Only(names...); err != nil {
		return prov, err
	}
	for _, late := range []bool{false, true} {
		for _, m := range providerMembers {
			if m.late == late {
				if err := m.read(po.Field(m.name), po, &prov, p); err != nil {
					return prov, err
				}
			}
		}
	}
	return prov, nil
}

// providerMember is one member of a provider in a trust policy document:
// its name and how it is read into the Provider (po is the provider's
// object, p holds the providers before it and the Sigstore roots). An
// absent optional member leaves the Provider as it is.
type providerMember struct {
	name string
	read func(f strictjson.Field, po strictjson.ObjectField, prov *Provider, p *Policy) error
	// late members are read after all others, which they depend on.
	late bool
}

// providerMembers are the members of a provider, in the order they are
// named in the error about an unknown member and read (late ones last);
// the first member in error is the one reported.
var providerMembers = []providerMember{
	{name: "id", read: readProviderID},
	// Whether a provider needs keys depends on its other members.
	{name: "keys", read: readProviderKeys, late: true},
	{name: "sigstore", read: readProviderSigstore},
	{name: "idp", read: readProviderIDP},
	{name: "require", read: readProviderRequire},
	{name: "registryNamespaces", read: readProviderNamespaces},
}

func readProviderID(f strictjson.Field, _ strictjson.ObjectField, prov *Provider, p *Policy) (err error) {
	if prov.ID, err = f.Str(); err != nil {
		return err
	}
	if err := etdi.ValidateProviderID(prov.ID); err != nil {
		return f.Errorf("%v", err)
	}
	if p.Provider(prov.ID) != nil {
		return f.Errorf("provider %q listed twice", prov.ID)
	}
	return nil
}

func readProviderIDP(f strictjson.Field, _ strictjson.ObjectField, prov *Provider, _ *Policy) (err error) {
	if f.V != nil {
		prov.IDP, err = parseIDP(f)
	}
	return err
}

func readProviderRequire(f strictjson.Field, _ strictjson.ObjectField, prov *Provider, _ *Policy) (err error) {
	if prov.Require, err = f.OptStr(); err != nil {
		return err
	}
	switch prov.Require {
	case "", RequireKey, RequireIDP, RequireBoth, RequireAny:
		return nil
	}
	return f.Errorf("%q is not key, idp, both or any", prov.Require)
}

func readProviderSigstore(f strictjson.Field, _ strictjson.ObjectField, prov *Provider, p *Policy) (err error) {
	if f.V == nil {
		return nil
	}
	if prov.Sigstore, err = parseSigstoreIdentities(f); err != nil {
		return err
	}
	if len(p.SigstoreRoots) == 0 {
		return f.Errorf("provider %q trusts keyless signers but the policy has no sigstoreTrustedRoots", prov.ID)
	}
	return nil
}

func readProviderKeys(_ strictjson.Field, po strictjson.ObjectField, prov *Provider, _ *Policy) error {
	ka, err := providerKeys(po, prov)
	if err != nil {
		return err
	}
	for j := 0; j < ka.Len(); j++ {
		k, err := parseKey(ka.Elem(j))
		if err != nil {
			return err
		}
		if slices.ContainsFunc(prov.Keys, func(x Key) bool { return x.ID == k.ID }) {
			return ka.Elem(j).Errorf("key %s listed twice", keys.ShortID(k.ID))
		}
		prov.Keys = append(prov.Keys, k)
	}
	return nil
}

func readProviderNamespaces(f strictjson.Field, _ strictjson.ObjectField, prov *Provider, _ *Policy) error {
	if f.V == nil {
		return nil
	}
	a, err := f.Array()
	if err != nil {
		return err
	}
	if a.Len() == 0 || a.Len() > MaxRegistryNamespaces {
		return a.Errorf("must list 1 to %d registry namespaces", MaxRegistryNamespaces)
	}
	for i := 0; i < a.Len(); i++ {
		ns, err := a.Elem(i).Str()
		if err != nil {
			return err
		}
		if err := etdi.ValidateRegistryNamespace(ns); err != nil {
			return a.Elem(i).Errorf("%v", err)
		}
		if slices.ContainsFunc(prov.RegistryNamespaces, func(x string) bool { return etdi.SameRegistryNamespace(x, ns) }) {
			return a.Elem(i).Errorf("registry namespace %q listed twice", ns)
		}
		prov.RegistryNamespaces = append(prov.RegistryNamespaces, ns)
	}
	return nil
}

// providerKeys returns the keys member of a provider whose other members
// are read, after checking that the provider can be satisfied: it has
// some way to sign, and what it requires is configured.
func providerKeys(po strictjson.ObjectField, prov *Provider) (strictjson.ArrayField, error) {
	ka := strictjson.ArrayField{Path: po.Field("keys").Path, V: &strictjson.Value{Kind: strictjson.Array}}
	if kf := po.Field("keys"); kf.V != nil || (prov.IDP == nil && len(prov.Sigstore) == 0) {
		var err error
		if ka, err = kf.Array(); err != nil {
			return ka, err
		}
	}
	if ka.Len() == 0 && prov.IDP == nil && len(prov.Sigstore) == 0 {
		return ka, ka.Errorf("provider %q has no keys, no keyless signers and no identity provider", prov.ID)
	}
	r := prov.EffectiveRequire()
	if (r == RequireKey || r == RequireBoth) && ka.Len() == 0 && len(prov.Sigstore) == 0 {
		return ka, po.Field("require").Errorf("provider %q requires a key signature but lists no keys", prov.ID)
	}
	if (r == RequireIDP || r == RequireBoth) && prov.IDP == nil {
		return ka, po.Field("require").Errorf("provider %q requires an identity provider token but configures none", prov.ID)
	}
	return ka, nil
}

func parseSigstoreRootSource(f strictjson.Field) (*SigstoreRootSource, error) {
	o, err := f.Object()
	if err != nil {
		return nil, err
	}
	if err := o.Only("tufMirror", "tufRoot", "fetched"); err != nil {
		return nil, err
	}
	var src SigstoreRootSource
	if src.Mirror, err = o.Field("tufMirror").Str(); err != nil {
		return nil, err
	}
	if src.TUFRoot, err = o.Field("tufRoot").Str(); err != nil {
		return nil, err
	}
	ft, err := o.Field("fetched").Str()
	if err != nil {
		return nil, err
	}
	if src.Fetched, err = strictjson.ParseTime(ft); err != nil {
		return nil, o.Field("fetched").Errorf("not an RFC 3339 time")
	}
	if err := CheckSigstoreRootSource(src); err != nil {
		return nil, f.Errorf("%v", err)
	}
	return &src, nil
}

func parseSigstoreIdentities(f strictjson.Field) ([]SigstoreIdentity, error) {
	a, err := f.Array()
	if err != nil {
		return nil, err
	}
	if a.Len() == 0 || a.Len() > 64 {
		return nil, a.Errorf("must list 1 to 64 keyless signers")
	}
	var out []SigstoreIdentity
	for i := 0; i < a.Len(); i++ {
		o, err := a.Elem(i).Object()
		if err != nil {
			return nil, err
		}
		if err := o.Only("issuer", "identity", "identityPattern", "repository", "github"); err != nil {
			return nil, err
		}
		var s SigstoreIdentity
		if s.Issuer, err = o.Field("issuer").Str(); err != nil {
			return nil, err
		}
		if s.Identity, err = o.Field("identity").OptStr(); err != nil {
			return nil, err
		}
		if s.IdentityPattern, err = o.Field("identityPattern").OptStr(); err != nil {
			return nil, err
		}
		if s.Repository, err = o.Field("repository").OptStr(); err != nil {
			return nil, err
		}
		if g := o.Field("github"); g.V != nil {
			if g.V.Kind != strictjson.Bool || !g.V.Bool {
				return nil, g.Errorf(`must be true (declares a GitHub Actions issuer), or absent`)
			}
			s.GitHub = true
		}
		if err := CheckSigstoreIdentity(s); err != nil {
			return nil, a.Elem(i).Errorf("%v", err)
		}
		if slices.Contains(out, s) {
			return nil, a.Elem(i).Errorf("keyless signer listed twice")
		}
		out = append(out, s)
	}
	return out, nil
}

func parseKey(f strictjson.Field) (Key, error) {
	var k Key
	o, err := f.Object()
	if err != nil {
		return k, err
	}
	if err := o.Only("id", "publicKey", "notBefore", "notAfter"); err != nil {
		return k, err
	}
	pemText, err := o.Field("publicKey").Str()
	if err != nil {
		return k, err
	}
	if k.PublicKey, err = keys.ParsePublicKey([]byte(pemText)); err != nil {
		return k, o.Field("publicKey").Errorf("%v", err)
	}
	if k.ID, err = keys.ID(k.PublicKey); err != nil {
		return k, err
	}
	id, err := o.Field("id").Str()
	if err != nil {
		return k, err
	}
	if id != k.ID {
		return k, o.Field("id").Errorf("%q is not the id of publicKey (%s)", id, k.ID)
	}
	if k.NotBefore, err = o.Field("notBefore").OptTime(); err != nil {
		return k, err
	}
	if k.NotAfter, err = o.Field("notAfter").OptTime(); err != nil {
		return k, err
	}
	if !k.NotBefore.IsZero() && !k.NotAfter.IsZero() && !k.NotAfter.After(k.NotBefore) {
		return k, o.Field("notAfter").Errorf("not after notBefore")
	}
	return k, nil
}

func parseIDP(f strictjson.Field) (*IDP, error) {
	o, err := f.Object()
	if err != nil {
		return nil, err
	}
	if err := o.Only("issuer", "audience", "subjects", "subjectClaim", "jwks", "introspection", "denyJti", "denySubjects"); err != nil {
		return nil, err
	}
	d := &IDP{}
	if d.Issuer, err = o.Field("issuer").Str(); err != nil {
		return nil, err
	}
	if err := CheckIssuer(d.Issuer); err != nil {
		return nil, o.Field("issuer").Errorf("%v", err)
	}
	if d.Audience, err = o.Field("audience").Str(); err != nil {
		return nil, err
	}
	if d.Audience == "" {
		return nil, o.Field("audience").Errorf("must not be empty")
	}
	if d.Subjects, err = stringList(o.Field("subjects"), true); err != nil {
		return nil, err
	}
	if d.SubjectClaim, err = o.Field("subjectClaim").OptStr(); err != nil {
		return nil, err
	}
	if jf := o.Field("jwks"); jf.V != nil {
		if _, err := jf.Object(); err != nil {
			return nil, err
		}
		d.JWKS = strictjson.AppendCanonical(nil, jf.V)
	}
	if inf := o.Field("introspection"); inf.V != nil {
		io, err := inf.Object()
		if err != nil {
			return nil, err
		}
		if err := io.Only("endpoint", "clientId", "clientSecretEnv"); err != nil {
			return nil, err
		}
		in := &Introspection{}
		if in.Endpoint, err = io.Field("endpoint").Str(); err != nil {
			return nil, err
		}
		if in.ClientID, err = io.Field("clientId").Str(); err != nil {
			return nil, err
		}
		if in.ClientSecretEnv, err = io.Field("clientSecretEnv").Str(); err != nil {
			return nil, err
		}
		d.Introspection = in
	}
	if d.DenyJTI, err = stringList(o.Field("denyJti"), false); err != nil {
		return nil, err
	}
	if d.DenySubjects, err = stringList(o.Field("denySubjects"), false); err != nil {
		return nil, err
	}
	return d, nil
}

func stringList(f strictjson.Field, required bool) ([]string, error) {
	if f.V == nil && !required {
		return nil, nil
	}
	a, err := f.Array()
	if err != nil {
		return nil, err
	}
	if required && a.Len() == 0 {
		return nil, a.Errorf("must list at least one")
	}
	var out []string
	for i := 0; i < a.Len(); i++ {
		s, err := a.Elem(i).Str()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// CheckIssuer accepts an https issuer URL, or http on a loopback address.
func CheckIssuer(issuer string) error {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return fmt.Errorf("issuer %q is not a URL", issuer)
	}
	if etdi.SecureURL(u) {
		return nil
	}
	return fmt.Errorf("issuer %q must use https (http only on loopback)", issuer)
}

// SetIDP configures the identity provider of provider id, creating the
// provider if needed.
func (p *Policy) SetIDP(id string, d *IDP, require string) error {
	if err := etdi.ValidateProviderID(id); err != nil {
		return err
	}
	if err := CheckIssuer(d.Issuer); err != nil {
		return err
	}
	if d.Audience == "" || len(d.Subjects) == 0 {
		return errors.New("an identity provider needs an audience and at least one subject")
	}
	prov := p.Provider(id)
	if prov == nil {
		p.Providers = append(p.Providers, Provider{ID: id})
		prov = &p.Providers[len(p.Providers)-1]
	}
	prov.IDP = d
	if require != "" {
		prov.Require = require
	}
	return nil
}

// parseUnsigned reads the policy's "unsigned" member: the rule as a
// string ("warn"), or an object {"rule": "warn", "onUpdate": "ask"} that
// also sets the update rule. Absent, unsigned tools are blocked.
func parseUnsigned(f strictjson.Field, p *Policy) error {
	if f.V == nil {
		return nil
	}
	if f.V.Kind != strictjson.Object {
		u, err := f.Str()
		if err != nil {
			return err
		}
		if p.Unsigned, err = ParseUnsignedRule(u); err != nil {
			return f.Errorf("%v", err)
		}
		return nil
	}
	uo, err := f.Object()
	if err != nil {
		return err
	}
	if err := uo.Only("rule", "onUpdate"); err != nil {
		return err
	}
	u, err := uo.Field("rule").Str()
	if err != nil {
		return err
	}
	if p.Unsigned, err = ParseUnsignedRule(u); err != nil {
		return uo.Field("rule").Errorf("%v", err)
	}
	if up, err := uo.Field("onUpdate").OptStr(); err != nil {
		return err
	} else if up != "" {
		if p.UnsignedUpdate, err = ParseUpdateRule(up); err != nil {
			return uo.Field("onUpdate").Errorf("%v", err)
		}
	}
	return nil
}

// ParseUnsignedRule parses "allow", "warn" or "block".
func ParseUnsignedRule(s string) (UnsignedRule, error) {
	switch r := UnsignedRule(s); r {
	case Allow, Warn, Block:
		return r, nil
	}
	return "", fmt.Errorf("unsigned rule %q is not allow, warn or block", s)
}

type jsonKey struct {
	ID        string `json:"id"`
	PublicKey string `json:"publicKey"`
	NotBefore string `json:"notBefore,omitempty"`
	NotAfter  string `json:"notAfter,omitempty"`
}

type jsonProvider struct {
	ID       string         `json:"id"`
	Keys     []jsonKey      `json:"keys,omitempty"`
	Sigstore []jsonSigstore `json:"sigstore,omitempty"`
	IDP      *jsonIDP       `json:"idp,omitempty"`
	Require  string         `json:"require,omitempty"`
	// RegistryNamespaces last: the provider's signers come first.
	RegistryNamespaces []string `json:"registryNamespaces,omitempty"`
}

type jsonSigstore struct {
	Issuer          string `json:"issuer"`
	Identity        string `json:"identity,omitempty"`
	IdentityPattern string `json:"identityPattern,omitempty"`
	Repository      string `json:"repository,omitempty"`
	GitHub          bool   `json:"github,omitempty"`
}

type jsonIDP struct {
	Issuer        string             `json:"issuer"`
	Audience      string             `json:"audience"`
	Subjects      []string           `json:"subjects"`
	SubjectClaim  string             `json:"subjectClaim,omitempty"`
	JWKS          json.RawMessage    `json:"jwks,omitempty"`
	Introspection *jsonIntrospection `json:"introspection,omitempty"`
	DenyJTI       []string           `json:"denyJti,omitempty"`
	DenySubjects  []string           `json:"denySubjects,omitempty"`
}

type jsonIntrospection struct {
	Endpoint        string `json:"endpoint"`
	ClientID        string `json:"clientId"`
	ClientSecretEnv string `json:"clientSecretEnv"`
}

type jsonUnsigned struct {
	Rule     UnsignedRule `json:"rule"`
	OnUpdate UpdateRule   `json:"onUpdate"`
}

type jsonPolicy struct {
	Version   int               `json:"version"`
	Unsigned  any               `json:"unsigned"`
	Artifacts ArtifactRule      `json:"artifacts,omitempty"`
	Providers []jsonProvider    `json:"providers"`
	Cedar     []string          `json:"cedar,omitempty"`
	Roots     []json.RawMessage `json:"sigstoreTrustedRoots,omitempty"`
	RootSrc   *jsonRootSource   `json:"sigstoreTrustedRootSource,omitempty"`
}

type jsonRootSource struct {
	Mirror  string `json:"tufMirror"`
	TUFRoot string `json:"tufRoot"`
	Fetched string `json:"fetched"`
}

// Marshal returns the policy as indented JSON, providers and keys in the
// order they were added.
func (p *Policy) Marshal() ([]byte, error) {
	var unsigned any = p.Unsigned
	if p.UnsignedUpdate != "" {
		// The object form only when it says more than the rule: a policy
		// without an update rule reads in an etdi that knows none.
		unsigned = jsonUnsigned{Rule: p.Unsigned, OnUpdate: p.UnsignedUpdate}
	}
	jp := jsonPolicy{Version: FormatVersion, Unsigned: unsigned, Artifacts: p.Artifacts, Providers: []jsonProvider{}, Cedar: p.Cedar}
	for _, r := range p.SigstoreRoots {
		jp.Roots = append(jp.Roots, r.JSON)
	}
	if src := p.SigstoreRootSource; src != nil && len(p.SigstoreRoots) > 0 {
		jp.RootSrc = &jsonRootSource{src.Mirror, src.TUFRoot, src.Fetched.UTC().Format(time.RFC3339Nano)}
	}
	for _, prov := range p.Providers {
		jv := jsonProvider{ID: prov.ID, Require: prov.Require, RegistryNamespaces: prov.RegistryNamespaces}
		for _, s := range prov.Sigstore {
			jv.Sigstore = append(jv.Sigstore, jsonSigstore(s))
		}
		if d := prov.IDP; d != nil {
			ji := &jsonIDP{Issuer: d.Issuer, Audience: d.Audience, Subjects: d.Subjects, SubjectClaim: d.SubjectClaim,
				JWKS: d.JWKS, DenyJTI: d.DenyJTI, DenySubjects: d.DenySubjects}
			if in := d.Introspection; in != nil {
				ji.Introspection = &jsonIntrospection{in.Endpoint, in.ClientID, in.ClientSecretEnv}
			}
			jv.IDP = ji
		}
		for _, k := range prov.Keys {
			pemBytes, err := keys.MarshalPublicKey(k.PublicKey)
			if err != nil {
				return nil, err
			}
			jk := jsonKey{ID: k.ID, PublicKey: string(pemBytes)}
			if !k.NotBefore.IsZero() {
				jk.NotBefore = k.NotBefore.UTC().Format(time.RFC3339)
			}
			if !k.NotAfter.IsZero() {
				jk.NotAfter = k.NotAfter.UTC().Format(time.RFC3339)
			}
			jv.Keys = append(jv.Keys, jk)
		}
		jp.Providers = append(jp.Providers, jv)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(jp); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Load reads and parses the policy file at path.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Save writes the policy to path atomically (a temporary file in the same
// directory, synced, then renamed), mode 0644: it holds public keys only.
func (p *Policy) Save(path string) error {
	data, err := p.Marshal()
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o644)
}
