package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/atomicfile"
	"github.com/etdi-dev/etdi/keyless"
	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/release"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/trust"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// signLong is sign's help text.
const signLong = `Sign a tool manifest (SPEC.md §4) into a bundle (SPEC.md §6): a DSSE
envelope around an in-toto statement naming every tool as <name>@<version>
with the SHA-256 of its canonical definition.

With --key the statement is signed with a provider key: an encrypted private
key file, env://VAR (the key's PEM text in an environment variable), or a KMS
URI when etdi is built with -tags kms. The password comes from
ETDI_PASSWORD, or a prompt on a terminal.

With --keyless there is no key to keep (SPEC.md §16): a fresh key pair
signs once, Sigstore's Fulcio certifies it for the CI job's OIDC identity
for ten minutes, the signature is recorded in the Rekor transparency log,
and --out is a Sigstore bundle (v0.3) whose DSSE payload is the statement.
In GitHub Actions etdi asks the job for its token (the workflow needs
'permissions: id-token: write'); elsewhere give it with --identity-token
FILE or env://VAR. --fulcio-url and --rekor-url name another Sigstore
instance (https, or http on loopback). --trusted-root verifies the bundle
before writing it. --attest-inputs DIR writes the predicate and subjects
for another Sigstore tool (GitHub's attest action, cosign) to sign instead.

With --idp-issuer (instead of or beside --key) etdi gets a token from the
provider's identity provider with the OAuth 2.0 client credentials grant,
asking for the scopes the manifest declares and binding it to this exact
statement with an RFC 9396 authorization_details entry (SPEC.md §13). The
client secret is read from the variable --client-secret-env names. Tokens
are short-lived: re-sign, or refresh the token, before it expires.
--idp-token-file uses a token obtained another way; --print-binding prints
what such a token must be bound to (use fixed --issued-at and --sequence so
the statement is the same when signing).

--expires takes days (180d), a duration (4320h) or an RFC 3339 time; the default is 180
days. --sequence must increase with every bundle you publish for a server;
the default is the issue time in Unix seconds.

--previous guards the clients that pinned your last release (docs/provider.md#a-release-against-the-previous-one):
give its bundle, a file or an https URL (http only to a loopback host; at
most 64 MiB, within 30 s), and sign compares the release with it tool by
tool, as those clients will, and prints what changed. It refuses, writing
nothing:
  exit 11  a tool whose definition or permissions changed while its version
           stayed the same, or that a new artifact or endpoint serves under
           it (a rug pull to every client that pinned it); a lower version
           (a downgrade); a --sequence that does not increase;
  exit 1   a tool of the previous release left out, unless named with
           --remove.
For each changed tool it says which version bump the change calls for:
major for a new permission scope, minor for a dropped one, patch for any
other change (a major version 0 asks minor for major); a smaller bump is a
warning, not a refusal. The previous bundle is parsed strictly, but its
signature is not verified against a trust policy: it only tells etdi what
clients may have pinned, so give the one you published. With --previous the
default sequence is the previous one plus one, when that is higher than the
issue time.

--server-json FILE with --bundle-url URL records the bundle in the server's
registry entry (docs/registry.md#provider-publishing-a-signed-server). Before anything is signed, the
manifest's server section must agree with server.json as etdi manifest
check --server-json compares them (server.registryName its name,
server.version its version, every package and remote bound), else exit 12,
and the URL must be https (http only to a loopback host) and fit with the
rest in the 4 KB the registry allows the publisher-provided _meta, else
exit 2 or 1. After the bundle is written, server.json's
_meta["io.modelcontextprotocol.registry/publisher-provided"]["dev.etdi"]
holds {"bundle": URL, "digest": "sha256:" and the SHA-256 of the bundle
file}; the file is replaced at once, every other member kept with its value
and in its place. Publish the bundle at URL, then server.json
(mcp-publisher publish).`

const signExample = `  etdi sign --key acme.key --out weather.etdi.json weather.manifest.json
  etdi sign --key acme.key --previous weather-1.2.0.etdi.json --out weather.etdi.json weather.manifest.json
  etdi sign --key env://ETDI_KEY --previous https://releases.acme.example/weather/1.2.0/weather.etdi.json \
            --remove get_alerts --out weather.etdi.json weather.manifest.json
  etdi sign --idp-issuer https://idp.example.com --client-id acme-ci --client-secret-env IDP_SECRET \
            --audience urn:etdi --out weather.etdi.json weather.manifest.json
  etdi sign --key env://ETDI_KEY --expires 30d --out - weather.manifest.json
  etdi sign --keyless --out weather.sigstore.json weather.manifest.json
  etdi sign --attest-inputs attest/ weather.manifest.json
  etdi sign --keyless --out weather.etdi.json --server-json server.json \
            --bundle-url https://github.com/acme/weather/releases/download/v1.2.0/weather.etdi.json weather.manifest.json`

func (e *env) signCmd() *cobra.Command {
	var sf signFlags
	cmd := &cobra.Command{
		Use:     "sign (--key KEY | --keyless | --idp-issuer URL ... | --idp-token-file FILE) [--previous OLD_BUNDLE] [--server-json FILE --bundle-url URL] --out BUNDLE MANIFEST",
		Short:   "Sign a tool manifest into a bundle",
		Long:    signLong,
		Example: signExample,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sf.check(); err != nil {
				return err
			}
			opts, err := sf.options(cmd.Flags().Changed("sequence"))
			if err != nil {
				return err
			}
			data, err := e.readInput(args[0])
			if err != nil {
				return err
			}
			m, err := etdi.ParseManifest(data)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			sj, err := e.signServerJSON(&sf, m)
			if err != nil {
				return err
			}
			if opts.Previous, err = sf.prev.load(e); err != nil {
				return err
			}
			opts.Remove = sf.prev.remove
			opts.Compared = func(r *release.Report) { sf.prev.report(e, r) }
			// sign.Bundle in two halves: the comparison with --previous
			// comes before anything the signer flags name is read.
			r, err := sign.Prepare(m, opts)
			if err != nil {
				return sf.prev.refused(e, err)
			}
			if sf.idp.printBinding {
				return e.writeJSON(r.Binding())
			}
			if sf.keyless.attestDir != "" {
				return e.writeAttestInputs(sf.keyless.attestDir, r)
			}
			signer, err := sf.signer(e, &opts)
			if err != nil {
				return err
			}
			if err := r.Sign(e.ctx, signer, opts.IDP); err != nil {
				return err
			}
			if err := e.writeSigned(sf.out, r, m); err != nil {
				return err
			}
			if sj != nil {
				return e.writeEtdiMeta(sf.serverJSON, sj, registry.EtdiMeta{Bundle: sf.bundleURL, Digest: registry.Digest(r.Bundle)})
			}
			return nil
		},
	}
	sf.register(cmd.Flags())
	return cmd
}

// signFlags are sign's flags: which signer, the statement's times, and
// the previous release.
type signFlags struct {
	keyRef, out, expires, issuedAt string
	serverJSON, bundleURL          string
	sequence                       uint64
	idp                            idpSignFlags
	keyless                        keylessFlags
	prev                           previousFlags
}

func (f *signFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.keyRef, "key", "", "private key: file, env://VAR or KMS URI")
	fl.StringVar(&f.out, "out", "", "bundle file to write, or - for standard output (required)")
	fl.StringVar(&f.expires, "expires", "", "validity: days (30d), a duration (720h) or an RFC 3339 time (default 180d)")
	fl.StringVar(&f.issuedAt, "issued-at", "", "issue time, RFC 3339 (default now; for reproducible builds)")
	fl.Uint64Var(&f.sequence, "sequence", 0, "bundle sequence number (default: issue time in Unix seconds)")
	fl.StringVar(&f.serverJSON, "server-json", "", "after signing, record the bundle's URL and digest in this server.json (with --bundle-url)")
	fl.StringVar(&f.bundleURL, "bundle-url", "", "with --server-json: the https URL the bundle will be published at")
	f.idp.register(fl)
	f.keyless.register(fl)
	f.prev.register(fl)
}

// check refuses flags that are missing or do not go together.
func (f *signFlags) check() error {
	idpf, kf := &f.idp, &f.keyless
	if f.out == "" && !idpf.printBinding && kf.attestDir == "" {
		return usagef("--out is required")
	}
	if f.keyRef == "" && !idpf.used() && !idpf.printBinding && !kf.on && kf.attestDir == "" {
		return usagef("give --key, --keyless, --idp-issuer or --idp-token-file")
	}
	if err := kf.check(f.keyRef != "" || idpf.used() || idpf.printBinding); err != nil {
		return err
	}
	if idpf.issuer != "" && idpf.tokenFile != "" {
		return usagef("--idp-issuer and --idp-token-file cannot be combined")
	}
	if idpf.issuer != "" && (idpf.clientID == "" || idpf.secretEnv == "" || idpf.audience == "") {
		return usagef("--idp-issuer needs --client-id, --client-secret-env and --audience")
	}
	if (f.serverJSON == "") != (f.bundleURL == "") {
		return usagef("--server-json and --bundle-url go together: the URL is recorded in the server.json")
	}
	if f.serverJSON != "" {
		if f.serverJSON == "-" {
			return usagef("--server-json takes a file, which is rewritten")
		}
		if idpf.printBinding || kf.attestDir != "" {
			return usagef("--server-json records a bundle that is signed: it cannot be combined with --print-binding or --attest-inputs")
		}
		// Any digest stands for the bundle's: only the URL is checked.
		if err := (registry.EtdiMeta{Bundle: f.bundleURL, Digest: registry.Digest(nil)}).Validate(); err != nil {
			return usagef("--bundle-url: %v", err)
		}
	}
	if (idpf.tokenFile != "" || idpf.printBinding) && f.issuedAt == "" {
		return usagef("--idp-token-file and --print-binding need a fixed --issued-at (and --sequence), so the statement the token is bound to is the one signed")
	}
	return nil
}

// options maps the statement's flags: --issued-at, --expires and
// --sequence (sequenceSet when given, even as 0).
func (f *signFlags) options(sequenceSet bool) (sign.BundleOptions, error) {
	opts := sign.BundleOptions{Options: sign.Options{Sequence: f.sequence}}
	var err error
	if opts.IssuedAt, err = parseTimeFlag("issued-at", f.issuedAt); err != nil {
		return opts, err
	}
	if opts.IssuedAt.IsZero() {
		opts.IssuedAt = time.Now()
	}
	if sequenceSet && f.sequence == 0 {
		// --sequence 0 asks for the issue time, also with --previous.
		opts.Sequence = uint64(opts.IssuedAt.Unix())
	}
	if f.expires == "" {
		return opts, nil
	}
	if d, derr := parseValidity(f.expires); derr == nil {
		if d <= 0 {
			return opts, usagef("--expires %q must be positive", f.expires)
		}
		opts.Expires = opts.IssuedAt.Add(d)
	} else if opts.Expires, err = parseTimeFlag("expires", f.expires); err != nil {
		return opts, usagef("--expires %q: want days (30d), a duration (720h) or an RFC 3339 time", f.expires)
	}
	return opts, nil
}

// signer maps the signer flags: --keyless, or --key and the identity
// provider flags (opts.IDP when both).
func (f *signFlags) signer(e *env, opts *sign.BundleOptions) (sign.Signer, error) {
	if f.keyless.on {
		return e.keylessSigner(&f.keyless)
	}
	var tok *sign.IDPToken
	if f.idp.used() {
		var err error
		if tok, err = e.idpToken(&f.idp); err != nil {
			return nil, err
		}
	}
	if f.keyRef == "" {
		return tok, nil
	}
	opts.IDP = tok
	return &sign.Key{Ref: f.keyRef, Password: func() ([]byte, error) { return e.password(false) }}, nil
}

// keylessFlags are sign's Sigstore flags (SPEC.md §16).
type keylessFlags struct {
	on                                               bool
	token, fulcio, rekor, trustedRootFile, attestDir string
}

func (k *keylessFlags) register(fl *pflag.FlagSet) {
	fl.BoolVar(&k.on, "keyless", false, "sign with Sigstore: a short-lived certificate for the CI job's OIDC identity, logged in Rekor")
	fl.StringVar(&k.token, "identity-token", "", "OIDC identity token for --keyless: FILE or env://VAR (default: GitHub Actions' token)")
	fl.StringVar(&k.fulcio, "fulcio-url", keyless.PublicFulcio, "Fulcio certificate authority for --keyless")
	fl.StringVar(&k.rekor, "rekor-url", keyless.PublicRekor, "Rekor transparency log for --keyless")
	fl.StringVar(&k.trustedRootFile, "trusted-root", "", "Sigstore trusted_root.json: verify the keyless bundle before writing it")
	fl.StringVar(&k.attestDir, "attest-inputs", "", "write DIR/predicate.json and DIR/subjects.txt for another Sigstore tool to sign (SPEC.md §16), and sign nothing")
}

// writeAttestInputs writes what a generic attestation tool (GitHub's
// attest action, cosign attest-blob) needs to produce the statement etdi
// would sign: the predicate, and the subjects in sha256sum's format.
func (e *env) writeAttestInputs(dir string, r *sign.Result) error {
	pred, subjects, err := r.AttestInputs()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "predicate.json"), pred, 0o644); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "subjects.txt"), subjects, 0o644); err != nil {
		return err
	}
	say(e.stderr, "etdi: wrote %s and %s (predicate type %s)\n", filepath.Join(dir, "predicate.json"), filepath.Join(dir, "subjects.txt"), etdi.PredicateType)
	return nil
}

// check refuses flags that do not go together: a Sigstore bundle carries
// one signature and no identity provider token.
func (k *keylessFlags) check(otherSigner bool) error {
	if k.attestDir != "" && (k.on || otherSigner) {
		return usagef("--attest-inputs signs nothing: it cannot be combined with --keyless, --key or the identity provider flags")
	}
	if !k.on {
		if k.token != "" || k.trustedRootFile != "" || k.fulcio != keyless.PublicFulcio || k.rekor != keyless.PublicRekor {
			return usagef("--identity-token, --fulcio-url, --rekor-url and --trusted-root need --keyless")
		}
		return nil
	}
	if otherSigner {
		return usagef("--keyless cannot be combined with --key, --idp-issuer, --idp-token-file or --print-binding: a Sigstore bundle carries one keyless signature")
	}
	return nil
}

// keylessSigner maps the --keyless flags: the services, checked here, and
// the trusted root that verifies the bundle before it is written.
func (e *env) keylessSigner(k *keylessFlags) (*sign.Keyless, error) {
	for _, u := range []string{k.fulcio, k.rekor} {
		if err := keyless.CheckServiceURL(u); err != nil {
			return nil, usagef("%v", err)
		}
	}
	s := &sign.Keyless{Options: keyless.SignOptions{FulcioURL: k.fulcio, RekorURL: k.rekor}, IdentityToken: k.token,
		Getenv: func(name string) string { v, _ := e.lookupEnv(name); return v }}
	if k.trustedRootFile != "" {
		data, err := e.readInput(k.trustedRootFile)
		if err != nil {
			return nil, err
		}
		roots, err := trust.ParseSigstoreRoots(data)
		if err != nil {
			return nil, usagef("--trusted-root %s: %v", k.trustedRootFile, err)
		}
		p := &trust.Policy{SigstoreRoots: roots}
		s.Options.TrustedRoot = p.SigstoreMaterial()
	}
	return s, nil
}

// writeSigned writes a signed bundle to out (standard output for "-") and
// says on standard error who signed which tools.
func (e *env) writeSigned(out string, r *sign.Result, m *etdi.Manifest) error {
	if out == "-" {
		_, err := e.stdout.Write(r.Bundle)
		return err
	}
	if err := atomicfile.Write(out, r.Bundle, 0o644); err != nil {
		return err
	}
	var names []string
	for _, t := range m.Tools {
		names = append(names, etdi.SubjectName(t.Name, t.Version))
	}
	kind := ""
	if r.Sigstore {
		kind = " (Sigstore bundle)"
	}
	say(e.stderr, "etdi: signed %d tool(s) for provider %q with %s: %s\netdi: wrote %s%s\n",
		len(m.Tools), m.Provider.ID, r.By(), strings.Join(names, ", "), out, kind)
	return nil
}

// idpSignFlags select how a provider gets its identity provider token.
type idpSignFlags struct {
	issuer, clientID, secretEnv, audience, resource, tokenFile string
	printBinding                                               bool
}

func (f *idpSignFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.issuer, "idp-issuer", "", "identity provider issuer URL: get a token with the client credentials grant")
	fl.StringVar(&f.clientID, "client-id", "", "OAuth client id (with --idp-issuer)")
	fl.StringVar(&f.secretEnv, "client-secret-env", "", "environment variable holding the client secret (with --idp-issuer)")
	fl.StringVar(&f.audience, "audience", "", "audience the verifiers expect (sent as the resource indicator)")
	fl.StringVar(&f.resource, "resource", "", "resource indicator to send instead of --audience")
	fl.StringVar(&f.tokenFile, "idp-token-file", "", "a token obtained another way, bound to this statement")
	fl.BoolVar(&f.printBinding, "print-binding", false, "print the authorization_details a token must carry for this statement, and exit")
}

func (f *idpSignFlags) used() bool { return f.issuer != "" || f.tokenFile != "" }

// idpToken maps the identity provider flags: the token of
// --idp-token-file, or what requests one from --idp-issuer.
func (e *env) idpToken(f *idpSignFlags) (*sign.IDPToken, error) {
	if f.tokenFile != "" {
		b, err := e.readInput(f.tokenFile)
		if err != nil {
			return nil, err
		}
		return &sign.IDPToken{Token: strings.TrimSpace(string(b))}, nil
	}
	secret, ok := e.lookupEnv(f.secretEnv)
	if !ok || secret == "" {
		return nil, fmt.Errorf("%s is not set", f.secretEnv)
	}
	resource := f.resource
	if resource == "" {
		resource = f.audience
	}
	return &sign.IDPToken{Issuer: f.issuer, ClientID: f.clientID, ClientSecret: secret, Resource: resource}, nil
}

// signServerJSON reads --server-json before anything is signed, and
// refuses a server.json that disagrees with the manifest
// (registry.Compare: the bundle would not bind to the registry entry, exit
// 12) or that could not record the bundle (registry.CanSetEtdiMeta: the
// registry's 4 KB limit). nil without --server-json.
func (e *env) signServerJSON(f *signFlags, m *etdi.Manifest) (*registry.ServerJSON, error) {
	if f.serverJSON == "" {
		return nil, nil
	}
	sj, err := e.readServerJSON(f.serverJSON)
	if err != nil {
		return nil, err
	}
	if ms := registry.Compare(sj, m.Server); len(ms) > 0 {
		sayError(e.stderr, mismatchList(fmt.Sprintf("server.json %s disagrees with the manifest, so clients checking its registry entry would refuse the bundle (impersonation); nothing was signed", f.serverJSON), ms))
		say(e.stderr, "etdi: hint: make the manifest from server.json with etdi manifest init --server-json %s, or compare them with etdi manifest check --server-json %s MANIFEST\n", f.serverJSON, f.serverJSON)
		return nil, &exitCodeError{exitImpersonation}
	}
	if err := registry.CanSetEtdiMeta(sj.Raw, f.bundleURL); err != nil {
		return nil, fmt.Errorf("%s: %w; nothing was signed", f.serverJSON, err)
	}
	return sj, nil
}

// writeEtdiMeta records where the signed bundle is published in
// server.json's publisher-provided _meta (registry.SetEtdiMeta), replacing
// the file at once (atomicfile): every other member keeps its value and
// place.
func (e *env) writeEtdiMeta(path string, sj *registry.ServerJSON, meta registry.EtdiMeta) error {
	doc, err := registry.SetEtdiMeta(sj.Raw, meta)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := atomicfile.Write(path, doc, mode); err != nil {
		return err
	}
	say(e.stderr, "etdi: wrote to %s: _meta %s %s: bundle %s, digest %s\n", path, registry.PublisherProvidedKey, registry.EtdiKey, meta.Bundle, meta.Digest)
	return nil
}
