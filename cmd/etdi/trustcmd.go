package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/idp"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/keyless/tuf"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/policy"
	"github.com/etdi-dev/etdi/strictjson"
	"github.com/etdi-dev/etdi/trust"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func (e *env) trustCmd() *cobra.Command {
	var policyPath string
	cmd := &cobra.Command{
		Use:   "trust",
		Short: "Manage the trust policy: trusted providers, their keys, the unsigned rule",
		Long: `Manage the trust policy file (SPEC.md §9) without editing JSON by hand.

A key is trusted only for the provider it is added under. Each key may have
a validity window (--not-before, --not-after) so keys can be rotated: add
the new key, then give the old one a --not-after. The unsigned rule says
what happens to tools no bundle signs: block (default), warn or allow.`,
	}
	cmd.PersistentFlags().StringVar(&policyPath, "trust", e.defaultTrust(), "trust policy file ($ETDI_TRUST)")
	// --policy is the older spelling, kept working as an alias.
	cmd.PersistentFlags().StringVar(&policyPath, "policy", e.defaultTrust(), "same as --trust")
	cmd.AddCommand(e.trustAddCmd(&policyPath), e.trustListCmd(&policyPath), e.trustRemoveCmd(&policyPath), e.trustUnsignedCmd(&policyPath), e.trustArtifactsCmd(&policyPath), e.trustCedarCmd(&policyPath), e.trustSigstoreRootCmd(&policyPath))
	return cmd
}

// loadOrNewPolicy loads the policy, or returns a new one if the file does
// not exist yet.
func loadOrNewPolicy(path string) (*trust.Policy, error) {
	p, err := trust.Load(path)
	if errors.Is(err, fs.ErrNotExist) {
		return trust.New(), nil
	}
	return p, err
}

func (e *env) trustAddCmd(policyPath *string) *cobra.Command {
	var provider, notBefore, notAfter string
	var keyFiles, namespaces []string
	var d idpFlags
	var sg sigstoreFlags
	cmd := &cobra.Command{
		Use:   "add --provider ID (--key FILE ... | --sigstore-issuer URL --sigstore-identity ID | --issuer URL --subject SUB --audience AUD | --registry-namespace NS ...)",
		Short: "Trust public keys or an identity provider for a provider (creates the policy file if needed)",
		Long: `Trust public keys, an identity provider, or both, for a provider.

With --issuer, bundles of the provider may carry a JWT from that OAuth 2.0 /
OpenID Connect issuer: it must be signed with one of the issuer's keys (found
by OIDC discovery, or from --jwks, a JWKS file pinned into the policy for
offline use), name one of the --subject values (in the claim --subject-claim,
default sub), the --audience, grant every declared scope, and be bound to the
exact statement. --introspection-endpoint adds an RFC 7662 revocation check;
--deny-jti and --deny-subject refuse tokens outright.

With --sigstore-issuer, the provider signs keylessly with Sigstore (SPEC.md
§16): its bundles are Sigstore bundles whose certificate was issued for an
OIDC token of that issuer and names --sigstore-identity exactly, or an
identity matched whole by --sigstore-identity-regexp (RE2). For GitHub
Actions the issuer is https://token.actions.githubusercontent.com and the
identity is the workflow file at its ref; the certificate must also name
that workflow's own repository as its source, unless
--sigstore-repository names the repository allowed to call it (a reusable
workflow of another repository: any repository can call a public one).
The same holds for GitHub Enterprise issuers
(https://token.actions.githubusercontent.com/ENTERPRISE,
https://token.actions.SUBDOMAIN.ghe.com, https://HOST/_services/token, or
any issuer given with --sigstore-github), and their identity patterns
must name the owner and the repository literally
(https://github\.com/acme/weather/...): a pattern that leaves either open
is refused.
Verification is offline against
the Sigstore trusted roots kept in the policy: --trusted-root FILE
(trusted_root.json, or one per line as 'gh attestation trusted-root'
prints them) sets them; 'etdi trust sigstore-root FILE' refreshes them.
A keyless signer counts as a key for --require.

--require says what a bundle must have: key, idp, both (the default when
both are configured) or any.

--registry-namespace names an MCP registry namespace the provider publishes
under (io.github.acme, com.acme.mcp; repeatable, up to 64). Once a provider
lists namespaces, its bundle checked for a registry entry whose name lies in
another namespace is impersonation (exit 12): com.acme covers com.acme/x
only, not com.acme.evil/x. For an io.github.OWNER namespace, a keyless
bundle must also be signed by a workflow of https://github.com/OWNER/, as
the registry required to publish there. Namespaces extend a provider already
in the policy, or one trusted in the same command.`,
		Example: `  etdi trust add --trust trust.json --provider acme --key acme.pub
  etdi trust add --trust trust.json --provider acme --key old.pub --not-after 2027-01-01T00:00:00Z
  etdi trust add --trust trust.json --provider acme --issuer https://idp.example.com --subject acme-ci --audience urn:etdi
  etdi trust add --trust trust.json --provider acme --issuer https://idp.example.com --subject acme-ci --audience urn:etdi --jwks idp-jwks.json
  etdi trust add --trust trust.json --provider acme --trusted-root trusted_root.json \
    --sigstore-issuer https://token.actions.githubusercontent.com \
    --sigstore-identity-regexp 'https://github\.com/acme/weather/\.github/workflows/release\.yml@refs/tags/v.*'
  etdi trust add --trust trust.json --provider acme --registry-namespace io.github.acme --registry-namespace com.acme`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if provider == "" || (len(keyFiles) == 0 && d.issuer == "" && d.require == "" && sg.issuer == "" && len(namespaces) == 0) {
				return usagef("--provider and at least one --key, a --sigstore-issuer, an --issuer or a --registry-namespace are required")
			}
			for _, ns := range namespaces {
				if err := etdi.ValidateRegistryNamespace(ns); err != nil {
					return usagef("--registry-namespace: %v", err)
				}
			}
			id, err := sg.identity()
			if err != nil {
				return err
			}
			nb, err := parseTimeFlag("not-before", notBefore)
			if err != nil {
				return err
			}
			na, err := parseTimeFlag("not-after", notAfter)
			if err != nil {
				return err
			}
			p, err := loadOrNewPolicy(*policyPath)
			if err != nil {
				return err
			}
			var msgs []string
			if sg.rootFile != "" {
				msg, err := e.setSigstoreRoots(p, sg.rootFile)
				if err != nil {
					return err
				}
				msgs = append(msgs, msg)
			}
			if id != nil {
				added, err := p.AddSigstore(provider, *id)
				if err != nil {
					return &usageError{err}
				}
				verb := "trusted"
				if !added {
					verb = "already trusted"
				}
				msgs = append(msgs, fmt.Sprintf("%s keyless signer %s for provider %q", verb, id, provider))
			}
			if d.issuer != "" || d.require != "" {
				msg, err := d.apply(p, provider, e)
				if err != nil {
					return err
				}
				msgs = append(msgs, msg)
			}
			for _, kf := range keyFiles {
				pub, err := keys.ReadPublicKeyFile(kf)
				if err != nil {
					return err
				}
				k := trust.Key{PublicKey: pub, NotBefore: nb, NotAfter: na}
				updated, err := p.AddKey(provider, k)
				if err != nil {
					return err
				}
				id, _ := keys.ID(pub)
				verb := "trusted"
				if updated {
					verb = "updated"
				}
				msgs = append(msgs, fmt.Sprintf("%s key %s (%s) for provider %q", verb, id, keys.Algorithm(pub), provider))
			}
			if len(namespaces) > 0 {
				// After the signers: a provider trusted in this command
				// takes namespaces too.
				added, err := p.AddRegistryNamespaces(provider, namespaces...)
				if err != nil {
					return err
				}
				for _, ns := range namespaces {
					verb := "already trusted"
					if slices.Contains(added, ns) {
						verb = "trusted"
					}
					msgs = append(msgs, fmt.Sprintf("%s registry namespace %s for provider %q", verb, ns, provider))
				}
			}
			if err := p.Save(*policyPath); err != nil {
				return err
			}
			for _, m := range msgs {
				fmt.Fprintln(e.stdout, m)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&provider, "provider", "", "provider id (required)")
	f.StringArrayVar(&keyFiles, "key", nil, "public key file (PEM); repeatable")
	f.StringVar(&notBefore, "not-before", "", "key is valid from this RFC 3339 time")
	f.StringVar(&notAfter, "not-after", "", "key is valid until this RFC 3339 time")
	f.StringArrayVar(&namespaces, "registry-namespace", nil, "MCP registry namespace the provider publishes under, e.g. io.github.acme; repeatable")
	d.register(f)
	sg.register(f)
	return cmd
}

// sigstoreFlags name a keyless signer and the trusted roots.
type sigstoreFlags struct {
	issuer, identityExact, identityRegexp, repository, rootFile string
	github                                                      bool
}

func (g *sigstoreFlags) register(f *pflag.FlagSet) {
	f.StringVar(&g.issuer, "sigstore-issuer", "", "OIDC issuer of a keyless (Sigstore) signer, e.g. https://token.actions.githubusercontent.com")
	f.StringVar(&g.identityExact, "sigstore-identity", "", "the keyless signer's certificate identity, exactly")
	f.StringVar(&g.identityRegexp, "sigstore-identity-regexp", "", "a pattern (RE2) the whole certificate identity must match")
	f.StringVar(&g.repository, "sigstore-repository", "", "the source repository the certificate must name, e.g. https://github.com/acme/weather (needed when the workflow is a reusable one of another repository)")
	f.BoolVar(&g.github, "sigstore-github", false, "the issuer is a GitHub Actions issuer of another form (GitHub Enterprise Server): apply GitHub's repository and pattern rules")
	f.StringVar(&g.rootFile, "trusted-root", "", "Sigstore trusted_root.json to keep in the policy (replaces the roots it holds)")
}

// identity is the keyless signer the flags name, or nil.
func (g *sigstoreFlags) identity() (*trust.SigstoreIdentity, error) {
	if g.issuer == "" {
		if g.identityExact != "" || g.identityRegexp != "" || g.repository != "" || g.github {
			return nil, usagef("--sigstore-identity, --sigstore-identity-regexp, --sigstore-repository and --sigstore-github need --sigstore-issuer")
		}
		return nil, nil
	}
	if (g.identityExact == "") == (g.identityRegexp == "") {
		return nil, usagef("--sigstore-issuer needs one of --sigstore-identity and --sigstore-identity-regexp")
	}
	id := &trust.SigstoreIdentity{Issuer: g.issuer, Identity: g.identityExact, IdentityPattern: g.identityRegexp, Repository: g.repository, GitHub: g.github}
	if err := trust.CheckSigstoreIdentity(*id); err != nil {
		return nil, usagef("%v", err)
	}
	return id, nil
}

// setSigstoreRoots replaces the policy's trusted roots with those of file.
func (e *env) setSigstoreRoots(p *trust.Policy, file string) (string, error) {
	data, err := e.readInput(file)
	if err != nil {
		return "", err
	}
	roots, err := trust.ParseSigstoreRoots(data)
	if err != nil {
		return "", usagef("--trusted-root %s: %v", file, err)
	}
	p.SigstoreRoots = roots
	p.SigstoreRootSource = nil // given by hand: no TUF source
	return fmt.Sprintf("kept %d Sigstore trusted root(s) from %s in the policy", len(roots), file), nil
}

func (e *env) trustSigstoreRootCmd(policyPath *string) *cobra.Command {
	var update bool
	var mirror, tufRoot string
	cmd := &cobra.Command{
		Use:   "sigstore-root (--update [--tuf-mirror URL --tuf-root FILE] | FILE)",
		Short: "Fetch (TUF) or replace the Sigstore trusted roots kept in the policy (keyless verification)",
		Long: `Replace the Sigstore trusted roots that keyless signatures are verified
against (SPEC.md §16).

With --update, fetch Sigstore's trusted_root.json through TUF: the
repository's metadata is verified from a TUF root (the public-good one
built into etdi, or --tuf-root FILE for a private instance at --tuf-mirror
URL), so a tampered file, expired metadata or a rollback to older metadata
is refused. The policy records the mirror, the digest of the TUF root and
the time of the fetch; the TUF metadata is kept in etdi's cache directory.
Creates the policy file if needed.

With FILE, take the roots from a trusted_root.json, a JSON array of them,
or one per line as 'gh attestation trusted-root' prints them.

The roots change when Sigstore rotates a certificate authority or a log key;
a bundle signed after a rotation fails with signature_invalid until the
policy holds the new root: run --update again, and review the change like
any trust change.`,
		Example: `  etdi trust sigstore-root --update
  etdi trust sigstore-root --update --tuf-mirror https://tuf.internal.example --tuf-root tuf-root.json
  gh attestation trusted-root > trusted_root.jsonl
  etdi trust sigstore-root --trust trust.json trusted_root.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if update {
				if len(args) != 0 {
					return usagef("--update fetches the trusted root: give no FILE")
				}
				return nil
			}
			if mirror != "" || tufRoot != "" {
				return usagef("--tuf-mirror and --tuf-root need --update")
			}
			if len(args) != 1 {
				return usagef("give a trusted root FILE, or --update to fetch it through TUF")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var p *trust.Policy
			var err error
			var msg string
			if update {
				if p, err = loadOrNewPolicy(*policyPath); err != nil {
					return err
				}
				msg, err = e.updateSigstoreRoots(p, mirror, tufRoot)
			} else {
				if p, err = loadPolicy(*policyPath); err != nil {
					return err
				}
				msg, err = e.setSigstoreRoots(p, args[0])
			}
			if err != nil {
				return err
			}
			if err := p.Save(*policyPath); err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, msg)
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&update, "update", false, "fetch the trusted root through TUF (Sigstore's public-good instance unless --tuf-mirror)")
	f.StringVar(&mirror, "tuf-mirror", "", "the TUF repository of a private Sigstore instance (https; with --tuf-root)")
	f.StringVar(&tufRoot, "tuf-root", "", "the TUF root (root.json) of that repository, obtained out of band")
	return cmd
}

// updateSigstoreRoots fetches the trusted root through TUF and keeps it,
// with where it came from, in the policy.
func (e *env) updateSigstoreRoots(p *trust.Policy, mirror, rootFile string) (string, error) {
	if rootFile != "" && mirror == "" {
		return "", usagef("--tuf-root needs --tuf-mirror: the root of a private instance verifies that instance's repository")
	}
	var anchor []byte
	if rootFile != "" {
		data, err := e.readInput(rootFile)
		if err != nil {
			return "", err
		}
		anchor = data
	}
	if mirror != "" {
		if err := tuf.CheckMirror(mirror); err != nil {
			return "", usagef("--tuf-mirror: %v", err)
		}
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the TUF metadata (set XDG_CACHE_HOME or HOME): %w", err)
	}
	res, err := tuf.Fetch(e.ctx, tuf.Options{Mirror: mirror, Root: anchor, CacheDir: filepath.Join(dir, "etdi", "tuf")})
	if err != nil {
		fix := "etdi trust sigstore-root --update"
		if mirror != "" {
			fix += " --tuf-mirror " + termtext.ShellQuote(mirror)
		}
		return "", &hintError{err, "check that the mirror is reachable and current, then run '" + fix + "' again; or give a trusted_root.json you verified: 'etdi trust sigstore-root FILE'"}
	}
	changed := len(p.SigstoreRoots) != len(res.Roots)
	for i := 0; !changed && i < len(res.Roots); i++ {
		changed = !bytes.Equal(p.SigstoreRoots[i].JSON, res.Roots[i].JSON)
	}
	p.SigstoreRoots = res.Roots
	src := res.Source
	p.SigstoreRootSource = &src
	state := "unchanged"
	if changed {
		state = "replaced the previous roots"
	}
	return fmt.Sprintf("kept %d Sigstore trusted root(s) from TUF mirror %s in the policy (%s; TUF root %s, fetched %s)",
		len(res.Roots), src.Mirror, state, src.TUFRoot, src.Fetched.Format(time.RFC3339)), nil
}

// idpFlags configure a provider's identity provider in the policy.
type idpFlags struct {
	issuer, audience, subjectClaim, jwksFile, require string
	subjects, denyJTI, denySubjects                   []string
	inEndpoint, inClientID, inSecretEnv               string
}

func (d *idpFlags) register(f *pflag.FlagSet) {
	f.StringVar(&d.issuer, "issuer", "", "identity provider issuer URL (https; http only on loopback)")
	f.StringArrayVar(&d.subjects, "subject", nil, "accepted token subject (client id of the provider's CI); repeatable")
	f.StringVar(&d.audience, "audience", "", "audience tokens must name")
	f.StringVar(&d.subjectClaim, "subject-claim", "", "claim holding the subject (default sub; e.g. client_id)")
	f.StringVar(&d.jwksFile, "jwks", "", "pin this JWKS file into the policy instead of discovering the issuer's keys")
	f.StringVar(&d.inEndpoint, "introspection-endpoint", "", "RFC 7662 endpoint checked for every token")
	f.StringVar(&d.inClientID, "introspection-client-id", "", "client id for introspection")
	f.StringVar(&d.inSecretEnv, "introspection-secret-env", "", "environment variable holding the introspection client secret")
	f.StringArrayVar(&d.denyJTI, "deny-jti", nil, "refuse the token with this jti (repeatable)")
	f.StringArrayVar(&d.denySubjects, "deny-subject", nil, "refuse tokens of this subject (repeatable)")
	f.StringVar(&d.require, "require", "", "what a bundle must carry: key, idp, both or any")
}

func (d *idpFlags) apply(p *trust.Policy, provider string, e *env) (string, error) {
	switch d.require {
	case "", trust.RequireKey, trust.RequireIDP, trust.RequireBoth, trust.RequireAny:
	default:
		return "", usagef("--require %q: want key, idp, both or any", d.require)
	}
	if d.issuer == "" {
		prov := p.Provider(provider)
		if prov == nil {
			return "", fmt.Errorf("provider %q is not in the policy", provider)
		}
		prov.Require = d.require
		return fmt.Sprintf("provider %q requires %s", provider, d.require), nil
	}
	c := &trust.IDP{Issuer: d.issuer, Audience: d.audience, Subjects: d.subjects, SubjectClaim: d.subjectClaim,
		DenyJTI: d.denyJTI, DenySubjects: d.denySubjects}
	if d.jwksFile != "" {
		b, err := os.ReadFile(d.jwksFile)
		if err != nil {
			return "", err
		}
		if _, err := idp.ParseJWKS(b); err != nil {
			return "", fmt.Errorf("%s: %w", d.jwksFile, err)
		}
		v, _ := strictjson.Parse(b)
		c.JWKS = strictjson.AppendCanonical(nil, v)
	}
	if d.inEndpoint != "" {
		if d.inClientID == "" || d.inSecretEnv == "" {
			return "", usagef("--introspection-endpoint needs --introspection-client-id and --introspection-secret-env")
		}
		c.Introspection = &trust.Introspection{Endpoint: d.inEndpoint, ClientID: d.inClientID, ClientSecretEnv: d.inSecretEnv}
	}
	if err := p.SetIDP(provider, c, d.require); err != nil {
		return "", &usageError{err}
	}
	return fmt.Sprintf("trusted identity provider %s for provider %q (subjects %s, audience %s)", d.issuer, provider, strings.Join(d.subjects, ", "), d.audience), nil
}

type trustListKey struct {
	ID        string `json:"id"`
	Algorithm string `json:"algorithm"`
	NotBefore string `json:"notBefore,omitempty"`
	NotAfter  string `json:"notAfter,omitempty"`
}

type trustListProvider struct {
	ID      string         `json:"id"`
	Require string         `json:"require"`
	Keys    []trustListKey `json:"keys"`
	Issuer  string         `json:"issuer,omitempty"`
	// Subjects and Audience of the identity provider.
	Subjects []string `json:"subjects,omitempty"`
	Audience string   `json:"audience,omitempty"`
	// PinnedJWKS says whether the issuer's keys are pinned offline.
	PinnedJWKS bool `json:"pinnedJwks,omitempty"`
	// Sigstore are the keyless signers.
	Sigstore []trustListSigstore `json:"sigstore,omitempty"`
	// RegistryNamespaces are the MCP registry namespaces the provider
	// publishes under.
	RegistryNamespaces []string `json:"registryNamespaces,omitempty"`
}

type trustListSigstore struct {
	Issuer          string `json:"issuer"`
	Identity        string `json:"identity,omitempty"`
	IdentityPattern string `json:"identityPattern,omitempty"`
	Repository      string `json:"repository,omitempty"`
	GitHub          bool   `json:"github,omitempty"`
}

type trustList struct {
	Policy    string              `json:"policy"`
	Unsigned  trust.UnsignedRule  `json:"unsigned"`
	OnUpdate  trust.UpdateRule    `json:"onUpdate"`
	Artifacts trust.ArtifactRule  `json:"artifacts"`
	Providers []trustListProvider `json:"providers"`
	Cedar     []string            `json:"cedar,omitempty"`
	// SigstoreRoots counts the Sigstore trusted roots kept in the policy.
	SigstoreRoots int `json:"sigstoreTrustedRoots"`
	// SigstoreRootSource says where they were fetched from through TUF.
	SigstoreRootSource *trustListRootSource `json:"sigstoreTrustedRootSource,omitempty"`
}

type trustListRootSource struct {
	Mirror  string `json:"tufMirror"`
	TUFRoot string `json:"tufRoot"`
	Fetched string `json:"fetched"`
}

func (e *env) trustListCmd(policyPath *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List trusted providers and keys",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadPolicy(*policyPath)
			if err != nil {
				return err
			}
			l := trustList{Policy: *policyPath, Unsigned: p.Unsigned, OnUpdate: p.OnUpdate(), Artifacts: p.ArtifactRule(), Providers: []trustListProvider{}, Cedar: p.Cedar,
				SigstoreRoots: len(p.SigstoreRoots)}
			if src := p.SigstoreRootSource; src != nil {
				l.SigstoreRootSource = &trustListRootSource{src.Mirror, src.TUFRoot, src.Fetched.UTC().Format(time.RFC3339)}
			}
			for _, prov := range p.Providers {
				lp := trustListProvider{ID: prov.ID, Require: prov.EffectiveRequire(), Keys: []trustListKey{}, RegistryNamespaces: prov.RegistryNamespaces}
				if d := prov.IDP; d != nil {
					lp.Issuer, lp.Subjects, lp.Audience, lp.PinnedJWKS = d.Issuer, d.Subjects, d.Audience, len(d.JWKS) > 0
				}
				for _, sg := range prov.Sigstore {
					lp.Sigstore = append(lp.Sigstore, trustListSigstore(sg))
				}
				for _, k := range prov.Keys {
					lk := trustListKey{ID: k.ID, Algorithm: keys.Algorithm(k.PublicKey)}
					if !k.NotBefore.IsZero() {
						lk.NotBefore = k.NotBefore.UTC().Format(time.RFC3339)
					}
					if !k.NotAfter.IsZero() {
						lk.NotAfter = k.NotAfter.UTC().Format(time.RFC3339)
					}
					lp.Keys = append(lp.Keys, lk)
				}
				l.Providers = append(l.Providers, lp)
			}
			if asJSON {
				return e.writeJSON(l)
			}
			fmt.Fprintf(e.stdout, "policy %s: unsigned tools: %s, server updates: %s", l.Policy, l.Unsigned, l.OnUpdate)
			if p.Artifacts != "" {
				fmt.Fprintf(e.stdout, ", unresolved artifacts: %s", p.Artifacts)
			}
			fmt.Fprintln(e.stdout)
			if len(p.Cedar) > 0 {
				say(e.stdout, "call-time policies: %s\n", strings.Join(p.Cedar, ", "))
			}
			if l.SigstoreRoots > 0 {
				say(e.stdout, "Sigstore trusted roots: %d\n", l.SigstoreRoots)
				if src := l.SigstoreRootSource; src != nil {
					say(e.stdout, "  fetched through TUF from %s at %s (TUF root %s)\n", src.Mirror, src.Fetched, src.TUFRoot)
				}
			}
			for _, lp := range l.Providers {
				fmt.Fprintf(e.stdout, "provider %s (requires %s)\n", lp.ID, lp.Require)
				if lp.Issuer != "" {
					fmt.Fprintf(e.stdout, "  identity provider %s, subjects %s, audience %s\n", lp.Issuer, strings.Join(lp.Subjects, ", "), lp.Audience)
				}
				for _, sg := range lp.Sigstore {
					repo := ""
					if sg.Repository != "" {
						repo = ", repository " + sg.Repository
					}
					if sg.IdentityPattern != "" {
						say(e.stdout, "  keyless %s matching %s%s\n", sg.Issuer, sg.IdentityPattern, repo)
					} else {
						say(e.stdout, "  keyless %s identity %s%s\n", sg.Issuer, sg.Identity, repo)
					}
				}
				for _, k := range lp.Keys {
					window := ""
					if k.NotBefore != "" || k.NotAfter != "" {
						window = fmt.Sprintf("  valid %s .. %s", orDash(k.NotBefore), orDash(k.NotAfter))
					}
					fmt.Fprintf(e.stdout, "  %s  %s%s\n", k.ID, k.Algorithm, window)
				}
				if len(lp.RegistryNamespaces) > 0 {
					say(e.stdout, "  registry namespaces %s\n", strings.Join(lp.RegistryNamespaces, ", "))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (e *env) trustRemoveCmd(policyPath *string) *cobra.Command {
	var provider, keyID string
	cmd := &cobra.Command{
		Use:   "remove --provider ID [--key KEY_ID]",
		Short: "Stop trusting a provider, or one of its keys",
		Example: `  etdi trust remove --trust trust.json --provider acme --key sha256:1a2b3c4d5e6f7a8b
  etdi trust remove --trust trust.json --provider acme`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if provider == "" {
				return usagef("--provider is required")
			}
			p, err := loadPolicy(*policyPath)
			if err != nil {
				return err
			}
			if err := p.Remove(provider, keyID); err != nil {
				return err
			}
			if err := p.Save(*policyPath); err != nil {
				return err
			}
			if keyID != "" {
				fmt.Fprintf(e.stdout, "removed key %s of provider %q\n", keyID, provider)
			} else {
				fmt.Fprintf(e.stdout, "removed provider %q\n", provider)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "provider id (required)")
	cmd.Flags().StringVar(&keyID, "key", "", "key id (or a prefix of at least 16 hex digits); omit to remove the provider")
	return cmd
}

func (e *env) trustArtifactsCmd(policyPath *string) *cobra.Command {
	return &cobra.Command{
		Use:   "artifacts require|warn|ignore",
		Short: "Set what happens when a bundle names a server's artifacts and etdi cannot resolve what it starts",
		Long: `A provider's bundle may name what its stdio server is made of (an npm or
PyPI package, an OCI image, a file). Before starting the server etdi
resolves what the command runs and compares: a mismatch is always
impersonation (exit 12). When it cannot resolve it (no lockfile, the image
not pulled yet, a package the runner would ask the registry for), this rule
decides: require makes it an error (exit 12), warn (the default) a warning,
ignore a note.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rule, err := trust.ParseArtifactRule(args[0])
			if err != nil {
				return &usageError{err}
			}
			p, err := loadOrNewPolicy(*policyPath)
			if err != nil {
				return err
			}
			p.Artifacts = rule
			if err := p.Save(*policyPath); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "unresolved artifacts: %s\n", rule)
			return nil
		},
	}
}

func (e *env) trustUnsignedCmd(policyPath *string) *cobra.Command {
	var onUpdate string
	cmd := &cobra.Command{
		Use:   "unsigned allow|warn|block [--on-update allow|ask|block]",
		Short: "Set what happens to tools that no bundle signs, and to updates of their servers",
		Long: `Set what happens to tools that no bundle signs (allow, warn or block), and
with --on-update what happens when what such a server runs changes while
its definitions stay approved (a new package version, an edited local
file): ask (the default) asks for approval at check and relays the
unchanged definitions in etdi run with a notice; allow accepts it with a
notice; block refuses it (check exits 11, etdi run does not start it).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rule, err := trust.ParseUnsignedRule(args[0])
			if err != nil {
				return &usageError{err}
			}
			var up trust.UpdateRule
			if cmd.Flags().Changed("on-update") {
				if up, err = trust.ParseUpdateRule(onUpdate); err != nil {
					return &usageError{err}
				}
			}
			p, err := loadOrNewPolicy(*policyPath)
			if err != nil {
				return err
			}
			p.Unsigned = rule
			if up != "" {
				p.UnsignedUpdate = up
			}
			if err := p.Save(*policyPath); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "unsigned tools: %s; server updates: %s\n", rule, p.OnUpdate())
			return nil
		},
	}
	cmd.Flags().StringVar(&onUpdate, "on-update", "", "what an update of an unsigned server's implementation with approved definitions needs: allow, ask or block (default ask)")
	return cmd
}

func (e *env) trustCedarCmd(policyPath *string) *cobra.Command {
	var none bool
	cmd := &cobra.Command{
		Use:   "cedar FILE... | --none",
		Short: "Name the Cedar call-time policy files that travel with the trust policy",
		Long: `Set the trust policy's cedar member: the Cedar call-time policy files
(docs/policies.md#call-time-policies) that etdi run enforces and etdi check and pin approve show,
wherever the trust policy is used. Each file is validated against etdi's
schema first; nothing is written when one does not validate. A path is
stored relative to the trust policy's directory when the file is in it or
below it (ship them together), else absolute. --none removes the member.`,
		Example: `  etdi trust cedar --trust /etc/etdi/trust.json /etc/etdi/org.cedar
  etdi trust cedar --none`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if none == (len(args) > 0) {
				return usagef("give the policy files, or --none")
			}
			if len(args) > trust.MaxCedarFiles {
				return usagef("at most %d policy files", trust.MaxCedarFiles)
			}
			if len(args) > 0 {
				set, err := policy.LoadFiles(args...)
				if err != nil {
					return err
				}
				say(e.stdout, "%d policies valid against etdi's schema\n", len(set.Policies()))
			}
			p, err := loadOrNewPolicy(*policyPath)
			if err != nil {
				return err
			}
			p.Cedar = nil
			dir, err := filepath.Abs(filepath.Dir(*policyPath))
			if err != nil {
				return err
			}
			for _, a := range args {
				abs, err := filepath.Abs(a)
				if err != nil {
					return err
				}
				stored := abs
				if rel, err := filepath.Rel(dir, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					stored = rel
				}
				if !slices.Contains(p.Cedar, stored) {
					p.Cedar = append(p.Cedar, stored)
				}
			}
			if err := p.Save(*policyPath); err != nil {
				return err
			}
			if none {
				say(e.stdout, "call-time policies: none\n")
				return nil
			}
			say(e.stdout, "call-time policies: %s\n", strings.Join(p.Cedar, ", "))
			return nil
		},
	}
	cmd.Flags().BoolVar(&none, "none", false, "remove the cedar member: no call-time policies")
	return cmd
}
