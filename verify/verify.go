// Package verify checks etdi bundles against a trust policy and, when given
// the tools a server really lists, checks each live tool against the signed
// definition (SPEC.md §10). It never fails open: every problem is a
// [finding.Finding] with its evidence, and a [Result] is verified only when a key the
// policy trusts for the claimed provider signed the exact payload.
package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/internal/redact"
	"github.com/etdi-dev/etdi/keyless"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/trust"
)

// SignerIdentity identifies who signed a verified bundle, as verification
// established it: a key, or a keyless signer (Algorithm [Keyless], KeyID
// empty). The pin store records it as a [github.com/etdi-dev/etdi/pin.SignerID].
type SignerIdentity struct {
	KeyID     string `json:"keyId,omitempty"`
	Algorithm string `json:"algorithm"`
	Provider  string `json:"provider"`
	// Sigstore is the keyless signer the certificate names, and Trusted
	// the trust policy entry it matched (trust.SigstoreIdentity.String).
	Sigstore *keyless.Identity `json:"sigstore,omitempty"`
	Trusted  string            `json:"trusted,omitempty"`
}

// Keyless is the Algorithm of a keyless signer.
const Keyless = "sigstore"

// ToolResult is one signed tool and, with live tools, its status.
type ToolResult struct {
	Name        string            `json:"name"`
	Version     string            `json:"version"`
	Digest      string            `json:"digest"`
	Permissions []etdi.Permission `json:"permissions"`
	// Status is [StatusUnverified] when the signature check failed (the
	// tool is only claimed), [StatusSigned] without live tools, and with
	// them [StatusOK], [StatusChanged] or [StatusNotServed].
	Status SignedStatus `json:"status"`
}

// SignedStatus is the status of a signed tool in a [Result] ([ToolResult]):
// whether its signature verified and, with live tools, whether the server
// serves it as signed. Its values appear in --json output.
type SignedStatus string

// Statuses of a signed tool.
const (
	// StatusUnverified: the signature check failed; the tool is only
	// claimed.
	StatusUnverified SignedStatus = "unverified"
	// StatusSigned: the signature verified and no live tools were given.
	StatusSigned SignedStatus = "signed"
	// StatusOK: the server serves the tool as signed.
	StatusOK SignedStatus = "ok"
	// StatusChanged: the server serves another definition under the
	// tool's name, or lists the name twice.
	StatusChanged SignedStatus = "changed"
	// StatusNotServed: the server does not list the signed tool.
	StatusNotServed SignedStatus = "not_served"
)

// Result is the outcome of verifying one bundle. The CLI prints it as
// prose or, with --json, encodes it as is.
type Result struct {
	Source string `json:"source,omitempty"`
	// Verified says the signature (and identity) verified; the bundle may
	// still fail on other findings.
	Verified bool            `json:"signatureVerified"`
	Provider etdi.Provider   `json:"provider"`
	Server   etdi.Server     `json:"server"`
	IssuedAt *time.Time      `json:"issuedAt,omitempty"`
	Expires  *time.Time      `json:"expires,omitempty"`
	Sequence uint64          `json:"sequence,omitempty"`
	Signer   *SignerIdentity `json:"signer,omitempty"`
	// Token is the identity provider's word, when a token was verified.
	Token *TokenIdentity `json:"token,omitempty"`
	Tools []ToolResult   `json:"tools"`
	// Unsigned lists live tools that no signature covers.
	Unsigned []string          `json:"unsigned,omitempty"`
	Findings []finding.Finding `json:"findings"`

	// Statement is the verified statement (nil unless Verified).
	Statement *etdi.Statement `json:"-"`
}

// OK reports whether the result has no error findings and its signature
// verified: its [Result.ExitCode] is 0.
func (r *Result) OK() bool { return r.ExitCode() == finding.ExitOK }

// ExitCode is the exit code of the result (SPEC.md §11): that of its error
// findings ([finding.ExitCode]), and never 0 when the signature did not
// verify ([finding.ExitSignature]): an unverified bundle never passes, with
// or without a finding that says why.
func (r *Result) ExitCode() int {
	code := finding.ExitCode(r.Findings)
	if code == finding.ExitOK && !r.Verified {
		return finding.ExitSignature
	}
	return code
}

func (r *Result) add(f finding.Finding) { r.Findings = append(r.Findings, f) }

// Options tune verification.
type Options struct {
	// Now is the verification time; zero means time.Now().
	Now time.Time
	// Live, if set, is the tools/list the server really serves.
	Live *etdi.ToolsList
	// Tokens verifies identity provider tokens; nil means bundles that
	// need a token fail.
	Tokens TokenVerifier
	// Context bounds the token verifier's network calls.
	Context context.Context
	// Origin is where the tools came from, for a bundle bound to its
	// server (SPEC.md §4.1); nil when they came from no server (a bundle
	// or a saved listing checked offline), which checks no binding.
	Origin *Origin
	// RegistryName is the name of the MCP registry entry the bundle was
	// found through (io.github.acme/weather); "" when it came from no
	// registry, and then the statement's own server.registryName, if
	// any, is held to the rules instead (SPEC.md §4.2, [RegistryFindings]).
	RegistryName string
}

// Origin is where a listing came from: a URL, or a command etdi started.
type Origin struct {
	// URL is the Streamable HTTP endpoint the tools were fetched from.
	URL string
	// Launched says the tools came from a command etdi started (stdio).
	// Then Match compares what the command runs with the artifacts a
	// bundle names (nil when they match), unless it could not be
	// resolved: Unresolved says why.
	Launched   bool
	Match      func(signed []etdi.Artifact) error
	Unresolved error
}

// TokenIdentity is who an identity provider token says published the
// statement.
type TokenIdentity struct {
	Issuer  string    `json:"issuer"`
	Subject string    `json:"subject"`
	JTI     string    `json:"jti,omitempty"`
	Scopes  []string  `json:"scopes,omitempty"`
	Expires time.Time `json:"expires"`
}

// TokenVerifier checks an identity provider token against the provider's
// policy and the exact payload it must be bound to. Package idp
// implements it (with network access for discovery, JWKS and
// introspection); package verify does no I/O of its own.
type TokenVerifier interface {
	VerifyToken(ctx context.Context, token string, cfg *trust.IDP, payload []byte, st *etdi.Statement) (*TokenIdentity, error)
}

// TokenError is a token that is not acceptable. Kind is the finding kind
// it becomes: [finding.SignatureInvalid], [finding.Expired] or
// [finding.Revoked]. Issuer and Subject are
// set when the token is valid but its subject is not trusted for the
// provider (UntrustedSubject).
type TokenError struct {
	Kind             finding.Kind
	Msg              string
	UntrustedSubject bool
	Issuer, Subject  string
}

func (e *TokenError) Error() string { return e.Msg }

// ClockSkew is the tolerance for a bundle issued in the future.
const ClockSkew = 5 * time.Minute

// Verify checks the bundle bytes against policy p. It does no I/O.
//
// The steps, in order (SPEC.md §10): parse the bundle and the statement;
// verify the signatures against the keys trusted for the claimed provider,
// then against every other trusted key to tell impersonation from a bad
// signature; hold the bundle to its server and its registry name; check
// key windows and the bundle's validity period; then,
// with live tools, compare each live tool with its signed definition.
func Verify(data []byte, p *trust.Policy, opts Options) *Result {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	r := &Result{Tools: []ToolResult{}, Findings: []finding.Finding{}}
	b, kb, err := ParseBundle(data)
	if err != nil {
		msg := "malformed bundle: " + err.Error()
		var pt *etdi.PayloadTypeError
		if errors.As(err, &pt) {
			msg = "wrong payload type: " + err.Error()
		}
		r.add(finding.Finding{Kind: finding.BundleInvalid, Severity: finding.Error, Message: msg})
		return r
	}
	st, err := etdi.ParseStatement(b.Envelope.Payload)
	if err != nil {
		// Tell tampering from a trusted signer's malformed statement: only
		// the latter has a signature by a trusted key.
		if kb != nil {
			r.add(keylessBadStatement(kb, p, err))
			return r
		}
		if m := anyTrustedSigner(b, p); m == nil {
			r.add(finding.Finding{Kind: finding.SignatureInvalid, Severity: finding.Error,
				Message: "the payload does not verify with any trusted key (and it is not a valid statement: " + err.Error() + ")"})
		} else {
			msg := fmt.Sprintf("payload signed by key %s of provider %q is not a valid statement: %v", keys.ShortID(m.key.ID), m.provider, err)
			var dm *etdi.DigestMismatchError
			if errors.As(err, &dm) {
				msg = fmt.Sprintf("statement signed by key %s of provider %q contradicts itself: %v", keys.ShortID(m.key.ID), m.provider, err)
			}
			r.add(finding.Finding{Kind: finding.BundleInvalid, Severity: finding.Error, KeyID: m.key.ID, Message: msg})
		}
		return r
	}
	r.Provider, r.Server = st.Provider, st.Server
	for _, t := range st.Tools {
		r.Tools = append(r.Tools, ToolResult{Name: t.Name, Version: t.Version, Digest: t.Digest.String(),
			Permissions: nonNil(t.Permissions), Status: StatusUnverified})
	}
	claims := claimedTools(st)
	signer, token, ok := checkIdentity(r, b, kb, st, p, now, opts, claims)
	if !ok || !checkOrigin(r, st, p, opts.Origin, claims) || !checkRegistry(r, st, p, opts.RegistryName, signer, claims) {
		return r
	}
	for i := range r.Tools {
		r.Tools[i].Status = StatusSigned
	}
	r.Verified = true
	r.Signer = signer
	r.Token = token
	r.Statement = st
	issued, expires := st.IssuedAt, st.Expires
	r.IssuedAt, r.Expires, r.Sequence = &issued, &expires, st.Sequence

	if now.After(st.Expires) {
		r.add(finding.Finding{Kind: finding.Expired, Severity: finding.Error,
			Message: fmt.Sprintf("bundle (%s) expired at %s", claims, st.Expires.Format(time.RFC3339))})
	}
	if st.IssuedAt.After(now.Add(ClockSkew)) {
		r.add(finding.Finding{Kind: finding.Expired, Severity: finding.Error,
			Message: fmt.Sprintf("bundle (%s) is issued in the future (%s)", claims, st.IssuedAt.Format(time.RFC3339))})
	}
	if opts.Live != nil {
		checkLive(r, st, opts.Live, p.Unsigned)
	}
	return r
}

// ParseBundle reads an etdi bundle (SPEC.md §6) or a Sigstore bundle
// (§16.1), told apart by their media type. For a Sigstore bundle, b holds
// its DSSE envelope and kb the bundle for [Verify]'s keyless checks; kb is
// nil for an etdi bundle. Nothing is verified.
func ParseBundle(data []byte) (b *etdi.Bundle, kb *keyless.Bundle, err error) {
	if !keyless.IsBundle(data) {
		b, err = etdi.ParseBundle(data)
		return b, nil, err
	}
	if kb, err = keyless.Parse(data); err != nil {
		return nil, nil, err
	}
	return &etdi.Bundle{Envelope: kb.Envelope}, kb, nil
}

// claimedTools names the tools a statement covers, for messages: at most
// five, then a count.
func claimedTools(st *etdi.Statement) string {
	const show = 5
	var names []string
	for i, t := range st.Tools {
		if i == show {
			names = append(names, fmt.Sprintf("and %d more", len(st.Tools)-show))
			break
		}
		names = append(names, etdi.SubjectName(t.Name, t.Version))
	}
	return "tools " + strings.Join(names, ", ")
}

func nonNil(p []etdi.Permission) []etdi.Permission {
	if p == nil {
		return []etdi.Permission{}
	}
	return p
}

type match struct {
	provider string
	key      *trust.Key
}

// verifies reports whether any signature of the envelope verifies with k.
func verifies(b *etdi.Bundle, pae []byte, k *trust.Key) bool {
	v, err := keys.Verifier(k.PublicKey)
	if err != nil {
		return false
	}
	for _, s := range b.Envelope.Signatures {
		if v.VerifySignature(bytes.NewReader(s.Sig), bytes.NewReader(pae)) == nil {
			return true
		}
	}
	return false
}

// anyTrustedSigner returns a trusted key (of any provider) that signed the
// envelope, or nil.
func anyTrustedSigner(b *etdi.Bundle, p *trust.Policy) *match {
	pae := etdi.PAE(b.Envelope.PayloadType, b.Envelope.Payload)
	for i := range p.Providers {
		for j := range p.Providers[i].Keys {
			if verifies(b, pae, &p.Providers[i].Keys[j]) {
				return &match{p.Providers[i].ID, &p.Providers[i].Keys[j]}
			}
		}
	}
	return nil
}

// checkIdentity applies the provider's require rule to the key signature
// and the identity provider token, recording the findings of whichever
// fail when the rule is not met.
func checkIdentity(r *Result, b *etdi.Bundle, kb *keyless.Bundle, st *etdi.Statement, p *trust.Policy, now time.Time, opts Options, claims string) (*SignerIdentity, *TokenIdentity, bool) {
	prov := p.Provider(st.Provider.ID)
	require := trust.RequireKey
	if prov != nil {
		require = prov.EffectiveRequire()
	}
	var signer *SignerIdentity
	var keyFinding *finding.Finding
	if len(b.Envelope.Signatures) == 0 {
		keyFinding = &finding.Finding{Kind: finding.SignatureMissing, Severity: finding.Error,
			Message: fmt.Sprintf("bundle for provider %q (%s) carries no signature", st.Provider.ID, claims)}
	} else if kb != nil {
		signer, keyFinding = checkKeyless(kb, st, p, claims)
	} else {
		signer, keyFinding = checkSignatures(b, st, p, now, claims)
	}
	var token *TokenIdentity
	var tokenFinding *finding.Finding
	if prov != nil && prov.IDP != nil && require != trust.RequireKey {
		token, tokenFinding = checkToken(b, st, p, prov, opts, claims)
	}
	keyOK, tokenOK := keyFinding == nil, token != nil
	var ok bool
	var failed []*finding.Finding
	switch require {
	case trust.RequireIDP:
		ok, failed = tokenOK, []*finding.Finding{tokenFinding}
		signer = nil
	case trust.RequireBoth:
		ok = keyOK && tokenOK
		failed = []*finding.Finding{keyFinding, tokenFinding}
	case trust.RequireAny:
		ok = keyOK || tokenOK
		failed = []*finding.Finding{keyFinding, tokenFinding}
	default:
		ok, failed = keyOK, []*finding.Finding{keyFinding}
		token = nil
	}
	if !ok {
		for _, f := range failed {
			if f != nil {
				r.add(*f)
			}
		}
		return nil, nil, false
	}
	if !keyOK {
		signer = nil
	}
	return signer, token, true
}

// checkToken verifies the bundle's identity provider token for prov.
func checkToken(b *etdi.Bundle, st *etdi.Statement, p *trust.Policy, prov *trust.Provider, opts Options, claims string) (*TokenIdentity, *finding.Finding) {
	if b.IDPToken == "" {
		return nil, &finding.Finding{Kind: finding.SignatureMissing, Severity: finding.Error,
			Message: fmt.Sprintf("bundle for provider %q (%s) carries no identity provider token", st.Provider.ID, claims)}
	}
	if opts.Tokens == nil {
		return nil, &finding.Finding{Kind: finding.SignatureInvalid, Severity: finding.Error,
			Message: fmt.Sprintf("bundle for provider %q (%s): no token verifier configured", st.Provider.ID, claims)}
	}
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	id, err := opts.Tokens.VerifyToken(ctx, b.IDPToken, prov.IDP, b.Envelope.Payload, st)
	if err == nil {
		return id, nil
	}
	var te *TokenError
	if !errors.As(err, &te) {
		te = &TokenError{Kind: finding.SignatureInvalid, Msg: err.Error()}
	}
	f := &finding.Finding{Kind: te.Kind, Severity: finding.Error,
		Message: fmt.Sprintf("bundle for provider %q (%s): %s", st.Provider.ID, claims, te.Msg)}
	if te.UntrustedSubject {
		var others []string
		for _, o := range p.Providers {
			if o.ID != prov.ID && o.IDP != nil && o.IDP.Issuer == te.Issuer && slices.Contains(o.IDP.Subjects, te.Subject) {
				others = append(others, o.ID)
			}
		}
		if len(others) > 0 {
			f.Kind = finding.Impersonation
			f.TrustedFor = others
			f.Message = fmt.Sprintf("bundle claims provider %q (%s) but its token's subject %q is trusted only for %s",
				st.Provider.ID, claims, te.Subject, quoteList(others))
		}
	}
	return nil, f
}

// checkSignatures finds a signature by a key trusted for the claimed
// provider and valid now. Failing that it returns the most telling
// finding: impersonation, key outside its window, or invalid signature.
func checkSignatures(b *etdi.Bundle, st *etdi.Statement, p *trust.Policy, now time.Time, claims string) (*SignerIdentity, *finding.Finding) {
	pae := etdi.PAE(b.Envelope.PayloadType, b.Envelope.Payload)
	claimed := st.Provider.ID
	var windowErr error
	var windowKey string
	if prov := p.Provider(claimed); prov != nil {
		for i := range prov.Keys {
			k := &prov.Keys[i]
			if !verifies(b, pae, k) {
				continue
			}
			if err := k.ValidAt(now); err != nil {
				windowErr, windowKey = err, k.ID
				continue
			}
			return &SignerIdentity{KeyID: k.ID, Algorithm: keys.Algorithm(k.PublicKey), Provider: claimed}, nil
		}
	}
	if windowErr != nil {
		return nil, &finding.Finding{Kind: finding.KeyNotValid, Severity: finding.Error, KeyID: windowKey,
			Message: fmt.Sprintf("bundle for provider %q (%s): the signing key is not acceptable now: %v", claimed, claims, windowErr)}
	}
	// No key of the claimed provider signed. Did a key of another provider?
	var others []match
	for i := range p.Providers {
		prov := &p.Providers[i]
		if prov.ID == claimed {
			continue
		}
		for j := range prov.Keys {
			if verifies(b, pae, &prov.Keys[j]) {
				others = append(others, match{prov.ID, &prov.Keys[j]})
			}
		}
	}
	if len(others) > 0 {
		var provs []string
		for _, m := range others {
			provs = append(provs, m.provider)
		}
		sort.Strings(provs)
		return nil, &finding.Finding{Kind: finding.Impersonation, Severity: finding.Error, KeyID: others[0].key.ID, TrustedFor: provs,
			Message: fmt.Sprintf("bundle claims provider %q (%s) but is signed by key %s, which is trusted only for %s",
				claimed, claims, keys.ShortID(others[0].key.ID), quoteList(provs))}
	}
	var hints []string
	for _, s := range b.Envelope.Signatures {
		if s.KeyID != "" {
			hints = append(hints, keys.ShortID(s.KeyID))
		}
	}
	hint := ""
	if len(hints) > 0 {
		hint = " (signature key ids claimed: " + strings.Join(hints, ", ") + ")"
	}
	msg := fmt.Sprintf("bundle for provider %q (%s): no signature verifies with a key trusted for the provider%s", claimed, claims, hint)
	if p.Provider(claimed) == nil {
		msg = fmt.Sprintf("bundle for provider %q (%s): the provider is not in the trust policy and no trusted key signed the bundle%s", claimed, claims, hint)
	}
	f := &finding.Finding{Kind: finding.SignatureInvalid, Severity: finding.Error, Message: msg}
	if len(b.Envelope.Signatures) > 0 {
		f.KeyID = b.Envelope.Signatures[0].KeyID
	}
	return nil, f
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

func checkLive(r *Result, st *etdi.Statement, live *etdi.ToolsList, rule trust.UnsignedRule) {
	count := map[string]int{}
	for _, t := range live.Tools {
		count[t.Name]++
	}
	status := map[string]SignedStatus{}
	reported := map[string]bool{}
	for _, lt := range live.Tools {
		if count[lt.Name] > 1 {
			if !reported[lt.Name] {
				reported[lt.Name] = true
				r.add(finding.Finding{Kind: finding.Impersonation, Severity: finding.Error, Tool: lt.Name,
					Message: fmt.Sprintf("server lists tool %q %d times; a client cannot tell which one it calls", lt.Name, count[lt.Name])})
			}
			status[lt.Name] = StatusChanged
			continue
		}
		signed := st.Tool(lt.Name)
		if signed == nil {
			r.Unsigned = append(r.Unsigned, lt.Name)
			f := finding.Finding{Kind: finding.UnsignedTool, Tool: lt.Name, Live: lt.Digest.String()}
			switch rule {
			case trust.Allow:
				f.Severity = finding.Info
				f.Message = fmt.Sprintf("tool %q is not signed by the bundle (allowed by policy)", lt.Name)
			case trust.Warn:
				f.Severity = finding.Warning
				f.Message = fmt.Sprintf("tool %q is not signed by the bundle (policy: warn)", lt.Name)
			default:
				f.Severity = finding.Error
				f.Message = fmt.Sprintf("tool %q is not signed by the bundle (policy: block)", lt.Name)
			}
			r.add(f)
			continue
		}
		if lt.Digest == signed.Digest {
			status[lt.Name] = StatusOK
			continue
		}
		status[lt.Name] = StatusChanged
		changes := etdi.Diff(signed.Definition(), lt.Definition())
		fields := etdi.ChangedFields(changes)
		r.add(finding.Finding{Kind: finding.DefinitionChanged, Severity: finding.Error, Tool: lt.Name, Version: signed.Version,
			Signed: signed.Digest.String(), Live: lt.Digest.String(), Fields: fields, Changes: changes,
			Message: fmt.Sprintf("tool %q@%s: live definition differs from the signed one (%s)",
				lt.Name, signed.Version, strings.Join(fields, ", "))})
	}
	for i := range r.Tools {
		t := &r.Tools[i]
		if s, ok := status[t.Name]; ok {
			t.Status = s
			continue
		}
		t.Status = StatusNotServed
		r.add(finding.Finding{Kind: finding.NotServed, Severity: finding.Info, Tool: t.Name, Version: t.Version,
			Message: fmt.Sprintf("tool %q@%s is signed but the server does not list it", t.Name, t.Version)})
	}
}

// checkOrigin adds the findings of OriginFindings and reports whether
// verification goes on (no error among them).
func checkOrigin(r *Result, st *etdi.Statement, p *trust.Policy, o *Origin, claims string) bool {
	ok := true
	for _, f := range OriginFindings(st, p, o, claims) {
		r.add(f)
		ok = ok && f.Severity != finding.Error
	}
	return ok
}

// OriginFindings holds a statement bound to its server (SPEC.md §4.1) to
// where the tools came from: a URL must be covered by one of its
// endpoints, a launched command must run one of its artifacts. A bundle
// served from elsewhere is impersonation, however valid its signature:
// anyone can replay a bundle. An artifact that cannot be resolved is
// what the policy's artifacts rule says. claims names the tools, for
// messages ("" for the statement's own).
func OriginFindings(st *etdi.Statement, p *trust.Policy, o *Origin, claims string) []finding.Finding {
	srv := st.Server
	if o == nil || !srv.Bound() {
		return nil
	}
	if claims == "" {
		claims = claimedTools(st)
	}
	imp := func(format string, a ...any) []finding.Finding {
		return []finding.Finding{{Kind: finding.Impersonation, Severity: finding.Error, Message: fmt.Sprintf("bundle of %s/%s (%s): ", st.Provider.ID, srv.Name, claims) + fmt.Sprintf(format, a...)}}
	}
	switch {
	case o.URL != "":
		if len(srv.Endpoints) == 0 {
			return imp("it is bound to a stdio server's artifacts, and these tools came from %s", redact.URL(o.URL))
		}
		if !srv.Covers(o.URL) {
			return imp("it is served only from %s, and these tools came from %s", strings.Join(srv.Endpoints, ", "), redact.URL(o.URL))
		}
	case o.Launched:
		if len(srv.Artifacts) == 0 {
			return imp("it is served only from %s, and these tools came from a command etdi started", strings.Join(srv.Endpoints, ", "))
		}
		if o.Unresolved != nil {
			sev := finding.Warning
			switch p.ArtifactRule() {
			case trust.ArtifactsRequire:
				sev = finding.Error
			case trust.ArtifactsIgnore:
				sev = finding.Info
			}
			return []finding.Finding{{Kind: finding.ArtifactUnresolved, Severity: sev,
				Message: fmt.Sprintf("bundle of %s/%s names its artifacts, and what the command runs could not be resolved (artifacts rule: %s): %v", st.Provider.ID, srv.Name, p.ArtifactRule(), o.Unresolved)}}
		}
		if o.Match == nil {
			return imp("nothing resolved the command's artifact")
		}
		if err := o.Match(srv.Artifacts); err != nil {
			return imp("%v", err)
		}
	}
	return nil
}

// checkKeyless verifies a keyless signature against the policy's Sigstore
// trusted roots, then matches the certificate's identity with the keyless
// signers trusted for the claimed provider. An identity trusted only for
// other providers is impersonation, as a key of another provider is.
func checkKeyless(kb *keyless.Bundle, st *etdi.Statement, p *trust.Policy, claims string) (*SignerIdentity, *finding.Finding) {
	claimed := st.Provider.ID
	ks, err := keyless.Verify(kb, p.SigstoreMaterial())
	if err != nil {
		return nil, &finding.Finding{Kind: finding.SignatureInvalid, Severity: finding.Error,
			Message: fmt.Sprintf("bundle for provider %q (%s): the keyless signature does not verify: %v", claimed, claims, err)}
	}
	if prov := p.Provider(claimed); prov != nil {
		for _, id := range prov.Sigstore {
			if id.Matches(ks.Issuer, ks.Identity, ks.Repository) {
				return &SignerIdentity{Algorithm: Keyless, Provider: claimed, Sigstore: ks, Trusted: id.String()}, nil
			}
		}
	}
	if others := keylessProviders(p, ks, claimed); len(others) > 0 {
		return nil, &finding.Finding{Kind: finding.Impersonation, Severity: finding.Error, TrustedFor: others,
			Message: fmt.Sprintf("bundle claims provider %q (%s) but is signed by %q (issuer %q), which is trusted only for %s",
				claimed, claims, ks.Identity, ks.Issuer, quoteList(others))}
	}
	msg := fmt.Sprintf("bundle for provider %q (%s): it is signed by %q (issuer %q), which is not a keyless signer trusted for the provider", claimed, claims, ks.Identity, ks.Issuer)
	if p.Provider(claimed) == nil {
		msg = fmt.Sprintf("bundle for provider %q (%s): the provider is not in the trust policy; it is signed by %q (issuer %q)", claimed, claims, ks.Identity, ks.Issuer)
	}
	return nil, &finding.Finding{Kind: finding.SignatureInvalid, Severity: finding.Error, Message: msg}
}

// keylessProviders lists the providers other than except that trust the
// keyless signer ks, sorted.
func keylessProviders(p *trust.Policy, ks *keyless.Identity, except string) []string {
	var out []string
	for _, prov := range p.Providers {
		if prov.ID == except {
			continue
		}
		for _, id := range prov.Sigstore {
			if id.Matches(ks.Issuer, ks.Identity, ks.Repository) {
				out = append(out, prov.ID)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// keylessBadStatement is the finding for a keyless bundle whose payload is
// not a valid statement: bundle_invalid when a trusted keyless signer made
// it, else signature_invalid (as for keys, step 2 of SPEC.md §10).
func keylessBadStatement(kb *keyless.Bundle, p *trust.Policy, stErr error) finding.Finding {
	if ks, err := keyless.Verify(kb, p.SigstoreMaterial()); err == nil {
		if provs := keylessProviders(p, ks, ""); len(provs) > 0 {
			return finding.Finding{Kind: finding.BundleInvalid, Severity: finding.Error,
				Message: fmt.Sprintf("payload signed by %q (issuer %q), trusted for %s, is not a valid statement: %v", ks.Identity, ks.Issuer, quoteList(provs), stErr)}
		}
	}
	return finding.Finding{Kind: finding.SignatureInvalid, Severity: finding.Error,
		Message: "the payload is not signed by a trusted keyless signer (and it is not a valid statement: " + stErr.Error() + ")"}
}
