package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/idp"
	"github.com/etdi-dev/etdi/internal/atomicfile"
	"github.com/etdi-dev/etdi/keyless"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/sign"
	"github.com/etdi-dev/etdi/trust"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func (e *env) signCmd() *cobra.Command {
	var keyRef, out, expires, issuedAt string
	var sequence uint64
	var f idpSignFlags
	var kf keylessFlags
	var pf previousFlags
	cmd := &cobra.Command{
		Use:   "sign (--key KEY | --keyless | --idp-issuer URL ... | --idp-token-file FILE) [--previous OLD_BUNDLE] --out BUNDLE MANIFEST",
		Short: "Sign a tool manifest into a bundle",
		Long: `Sign a tool manifest (SPEC.md §4) into a bundle (SPEC.md §6): a DSSE
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
issue time.`,
		Example: `  etdi sign --key acme.key --out weather.etdi.json weather.manifest.json
  etdi sign --key acme.key --previous weather-1.2.0.etdi.json --out weather.etdi.json weather.manifest.json
  etdi sign --key env://ETDI_KEY --previous https://releases.acme.example/weather/1.2.0/weather.etdi.json \
            --remove get_alerts --out weather.etdi.json weather.manifest.json
  etdi sign --idp-issuer https://idp.example.com --client-id acme-ci --client-secret-env IDP_SECRET \
            --audience urn:etdi --out weather.etdi.json weather.manifest.json
  etdi sign --key env://ETDI_KEY --expires 30d --out - weather.manifest.json
  etdi sign --keyless --out weather.sigstore.json weather.manifest.json
  etdi sign --attest-inputs attest/ weather.manifest.json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" && !f.printBinding && kf.attestDir == "" {
				return usagef("--out is required")
			}
			if keyRef == "" && !f.used() && !f.printBinding && !kf.on && kf.attestDir == "" {
				return usagef("give --key, --keyless, --idp-issuer or --idp-token-file")
			}
			if err := kf.check(keyRef != "" || f.used() || f.printBinding); err != nil {
				return err
			}
			if f.issuer != "" && f.tokenFile != "" {
				return usagef("--idp-issuer and --idp-token-file cannot be combined")
			}
			if f.issuer != "" && (f.clientID == "" || f.secretEnv == "" || f.audience == "") {
				return usagef("--idp-issuer needs --client-id, --client-secret-env and --audience")
			}
			if (f.tokenFile != "" || f.printBinding) && issuedAt == "" {
				return usagef("--idp-token-file and --print-binding need a fixed --issued-at (and --sequence), so the statement the token is bound to is the one signed")
			}
			opts := sign.Options{Sequence: sequence}
			var err error
			if opts.IssuedAt, err = parseTimeFlag("issued-at", issuedAt); err != nil {
				return err
			}
			if opts.IssuedAt.IsZero() {
				opts.IssuedAt = time.Now()
			}
			if expires != "" {
				if d, derr := parseValidity(expires); derr == nil {
					if d <= 0 {
						return usagef("--expires %q must be positive", expires)
					}
					opts.Expires = opts.IssuedAt.Add(d)
				} else if opts.Expires, err = parseTimeFlag("expires", expires); err != nil {
					return usagef("--expires %q: want days (30d), a duration (720h) or an RFC 3339 time", expires)
				}
			}
			data, err := e.readInput(args[0])
			if err != nil {
				return err
			}
			m, err := etdi.ParseManifest(data)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			prev, err := pf.load(e)
			if err != nil {
				return err
			}
			if prev != nil && !cmd.Flags().Changed("sequence") {
				opts.Sequence = sequenceAfter(prev, opts.IssuedAt)
			}
			st, payload, err := sign.Build(m, opts)
			if err != nil {
				return err
			}
			if prev != nil {
				if err := pf.guard(e, prev, st); err != nil {
					return err
				}
			}
			if f.printBinding {
				return e.writeJSON(struct {
					AuthorizationDetails []idp.Detail `json:"authorization_details"`
					Scope                string       `json:"scope"`
					PayloadDigest        string       `json:"payloadDigest"`
				}{[]idp.Detail{idp.DetailFor(st, payload)}, strings.Join(idp.Scopes(st), " "), idp.PayloadDigest(payload)})
			}
			if kf.attestDir != "" {
				return e.writeAttestInputs(kf.attestDir, st, payload)
			}
			if kf.on {
				return e.signKeyless(&kf, m, payload, out)
			}
			b := &etdi.Bundle{Envelope: etdi.Envelope{PayloadType: etdi.PayloadType, Payload: payload, Signatures: []etdi.Signature{}}}
			var who []string
			if keyRef != "" {
				signer, pub, err := keys.LoadSigner(e.ctx, keyRef, func() ([]byte, error) { return e.password(false) })
				if err != nil {
					return err
				}
				sig, err := sign.SignPayload(payload, signer, pub)
				if err != nil {
					return err
				}
				b.Envelope.Signatures = append(b.Envelope.Signatures, sig)
				id, _ := keys.ID(pub)
				who = append(who, "key "+keys.ShortID(id))
			}
			if f.used() {
				token, err := e.idpToken(&f, st, payload)
				if err != nil {
					return err
				}
				b.IDPToken = token
				who = append(who, "a token of "+f.issuerOr())
			}
			return e.writeSigned(out, b.Marshal(), m, strings.Join(who, " and "), "")
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&keyRef, "key", "", "private key: file, env://VAR or KMS URI")
	fl.StringVar(&out, "out", "", "bundle file to write, or - for standard output (required)")
	fl.StringVar(&expires, "expires", "", "validity: days (30d), a duration (720h) or an RFC 3339 time (default 180d)")
	fl.StringVar(&issuedAt, "issued-at", "", "issue time, RFC 3339 (default now; for reproducible builds)")
	fl.Uint64Var(&sequence, "sequence", 0, "bundle sequence number (default: issue time in Unix seconds)")
	f.register(fl)
	kf.register(fl)
	pf.register(fl)
	return cmd
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
func (e *env) writeAttestInputs(dir string, st *etdi.Statement, payload []byte) error {
	v, err := etdi.ParseJSON(payload)
	if err != nil {
		return err
	}
	pred := v.Get("predicate")
	if pred == nil {
		return fmt.Errorf("statement without a predicate")
	}
	var subjects strings.Builder
	for _, t := range st.Tools {
		fmt.Fprintf(&subjects, "%s  %s\n", t.Digest.Hex(), etdi.SubjectName(t.Name, t.Version))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "predicate.json"), append(etdi.AppendCanonical(nil, pred), '\n'), 0o644); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "subjects.txt"), []byte(subjects.String()), 0o644); err != nil {
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

// signKeyless signs payload with Sigstore and writes the Sigstore bundle.
func (e *env) signKeyless(k *keylessFlags, m *etdi.Manifest, payload []byte, out string) error {
	opts := keyless.SignOptions{FulcioURL: k.fulcio, RekorURL: k.rekor}
	for _, u := range []string{k.fulcio, k.rekor} {
		if err := keyless.CheckServiceURL(u); err != nil {
			return usagef("%v", err)
		}
	}
	if k.trustedRootFile != "" {
		data, err := e.readInput(k.trustedRootFile)
		if err != nil {
			return err
		}
		roots, err := trust.ParseSigstoreRoots(data)
		if err != nil {
			return usagef("--trusted-root %s: %v", k.trustedRootFile, err)
		}
		p := &trust.Policy{SigstoreRoots: roots}
		opts.TrustedRoot = p.SigstoreMaterial()
	}
	var err error
	opts.IDToken, err = keyless.IdentityToken(e.ctx, k.token, func(name string) string {
		v, _ := e.lookupEnv(name)
		return v
	})
	if err != nil {
		return err
	}
	body, err := keyless.Sign(e.ctx, payload, opts)
	if err != nil {
		return fmt.Errorf("keyless signing: %w", err)
	}
	who := "a keyless certificate"
	if id, iss, err := keyless.SignerOf(body); err == nil {
		who = fmt.Sprintf("a keyless certificate for %s (issuer %s)", id, iss)
	}
	return e.writeSigned(out, body, m, who, " (Sigstore bundle)")
}

// writeSigned writes a signed bundle to out (standard output for "-") and
// says on standard error who signed which tools.
func (e *env) writeSigned(out string, body []byte, m *etdi.Manifest, who, kind string) error {
	if out == "-" {
		_, err := e.stdout.Write(body)
		return err
	}
	if err := atomicfile.Write(out, body, 0o644); err != nil {
		return err
	}
	var names []string
	for _, t := range m.Tools {
		names = append(names, etdi.SubjectName(t.Name, t.Version))
	}
	say(e.stderr, "etdi: signed %d tool(s) for provider %q with %s: %s\netdi: wrote %s%s\n",
		len(m.Tools), m.Provider.ID, who, strings.Join(names, ", "), out, kind)
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

func (f *idpSignFlags) issuerOr() string {
	if f.issuer != "" {
		return f.issuer
	}
	return "the identity provider"
}

// idpToken gets (or reads) the token and checks, without trusting it, that
// it is bound to this payload, so a wrong token fails here.
func (e *env) idpToken(f *idpSignFlags, st *etdi.Statement, payload []byte) (string, error) {
	var token string
	if f.tokenFile != "" {
		b, err := e.readInput(f.tokenFile)
		if err != nil {
			return "", err
		}
		token = strings.TrimSpace(string(b))
	} else {
		secret, ok := e.lookupEnv(f.secretEnv)
		if !ok || secret == "" {
			return "", fmt.Errorf("%s is not set", f.secretEnv)
		}
		resource := f.resource
		if resource == "" {
			resource = f.audience
		}
		var err error
		if token, err = idp.RequestToken(e.ctx, nil, f.issuer, f.clientID, secret, resource, st, payload); err != nil {
			return "", err
		}
	}
	if err := idp.CheckUnverifiedBinding(token, payload); err != nil {
		return "", fmt.Errorf("the identity provider token does not fit this statement: %w", err)
	}
	return token, nil
}
