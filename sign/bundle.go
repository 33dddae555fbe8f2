package sign

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/idp"
	"github.com/etdi-dev/etdi/keyless"
	"github.com/etdi-dev/etdi/keys"
	"github.com/etdi-dev/etdi/release"
	"github.com/etdi-dev/etdi/strictjson"
	"github.com/sigstore/sigstore/pkg/signature"
)

// A Signer is what proves who made a bundle: a provider key ([Key] or
// [KeyPair]), an identity provider token ([IDPToken]) or a keyless
// Sigstore certificate ([Keyless]). [Bundle] takes one.
type Signer interface {
	// sign adds the signer's proof to r, whose statement is built.
	sign(ctx context.Context, r *Result) error
}

// Key is a provider key named by reference, as [keys.LoadSigner] opens
// it: an encrypted private key file, env://NAME (the same PEM text in an
// environment variable) or a KMS URI. Password is asked only for an
// encrypted key, and only once the statement is built and, with
// [BundleOptions.Previous], the release is accepted.
type Key struct {
	Ref      string
	Password keys.PassFunc
}

// KeyPair is a provider key already in memory: signer and its public key.
type KeyPair struct {
	Signer signature.Signer
	Public crypto.PublicKey
}

// IDPToken proves the provider's identity with a token of its identity
// provider bound to the exact statement (SPEC.md §13). Either Token is a
// token obtained another way, or, when Token is empty and Issuer is set,
// [Bundle] requests one from Issuer with the
// OAuth 2.0 client credentials grant (ClientID, ClientSecret), asking for
// the statement's scopes and sending Resource as the RFC 8707 resource
// indicator. Either way a token not bound to the statement is refused, and
// so is one whose audience does not name Audience, when it is set.
// Nothing of the token is verified: that is each client's business.
type IDPToken struct {
	Token                                              string
	Issuer, ClientID, ClientSecret, Resource, Audience string
	// Client makes the requests; nil means one with a 10 s timeout.
	Client *http.Client
}

// Keyless signs with Sigstore (docs/storage.md#history-and-checkpoints): a fresh key pair certified
// by Fulcio for the signer's OIDC identity, the signature recorded in
// Rekor. The bundle is then a Sigstore bundle carrying the statement.
// When Options.IDToken ([keyless.SignOptions.IDToken]) is empty the token
// comes from IdentityToken: a file, env://NAME, or empty for the GitHub
// Actions job's own token, read with Getenv ([os.Getenv] when nil), as
// [keyless.IdentityToken] does.
type Keyless struct {
	Options       keyless.SignOptions
	IdentityToken string
	Getenv        func(string) string
}

// BundleOptions control the statement and what [Bundle] checks before it
// signs.
type BundleOptions struct {
	Options
	// Previous is the statement of the server's previous release. When
	// set, the release is compared with it as the clients that pinned it
	// will compare (docs/provider.md#a-release-against-the-previous-one), and a release they would refuse is
	// not signed: Bundle returns a [*RefusedError]. With Previous and no
	// Sequence, the sequence is the issue time in Unix seconds or the
	// previous one plus one, whichever is higher.
	Previous *etdi.Statement
	// Remove names the tools of Previous left out on purpose.
	Remove []string
	// Compared, when set, is called with the comparison with Previous
	// before anything is signed, whether the release is refused or not.
	Compared func(*release.Report)
	// IDP adds an identity provider token beside a key's signature.
	IDP *IDPToken
}

// Result is a signed release: the statement, the exact payload that was
// signed, the comparison with the previous release, and the bundle.
type Result struct {
	Statement *etdi.Statement
	Payload   []byte
	// Release is the comparison with BundleOptions.Previous; nil without.
	Release *release.Report
	// Bundle is the file to publish: an etdi bundle, or a Sigstore bundle
	// when Sigstore is set. Prepare leaves it nil, Sign sets it.
	Bundle   []byte
	Sigstore bool
	// KeyID is the id of the key that signed, if one did.
	KeyID string
	// TokenIssuer is the issuer a token was requested from, and Token
	// says a token is in the bundle (obtained another way when
	// TokenIssuer is empty).
	TokenIssuer string
	Token       bool
	// KeylessIdentity and KeylessIssuer are what the keyless certificate
	// names, read without verifying it; empty if it cannot be read.
	KeylessIdentity, KeylessIssuer string

	envelope etdi.Bundle
}

// RefusedError is [Bundle]'s error for a release that the clients of the
// previous one would refuse (docs/provider.md#a-release-against-the-previous-one). Nothing was signed.
type RefusedError struct {
	Release *release.Report
}

func (e *RefusedError) Error() string {
	return "the release is refused (docs/provider.md#a-release-against-the-previous-one)"
}

// RugPull reports whether clients would see the release as a rug pull or
// a downgrade: a tool changed under its version, a lower version, or a
// sequence that does not increase. Otherwise it only leaves out a tool
// that [BundleOptions.Remove] does not name.
func (e *RefusedError) RugPull() bool {
	if e.Release.SequenceRefused {
		return true
	}
	for _, t := range e.Release.Tools {
		if t.Refused && t.Status != release.StatusRemoved {
			return true
		}
	}
	return false
}

// PreviousError says the previous release cannot be compared with this
// one: another server's, or Remove names a tool it should not.
type PreviousError struct{ Err error }

func (e *PreviousError) Error() string { return e.Err.Error() }
func (e *PreviousError) Unwrap() error { return e.Err }

// Bundle builds the statement of manifest m, compares it with the
// previous release when opts.Previous is set, and signs it with signer
// (and opts.IDP's token beside a key). It is the one way etdi signs; the
// etdi command's sign only maps its flags onto it.
func Bundle(ctx context.Context, m *etdi.Manifest, signer Signer, opts BundleOptions) (*Result, error) {
	r, err := Prepare(m, opts)
	if err != nil {
		return nil, err
	}
	if err := r.Sign(ctx, signer, opts.IDP); err != nil {
		return nil, err
	}
	return r, nil
}

// Sign signs a prepared statement with signer, and with token beside a
// key's signature when token is set, and sets r.Bundle: the second half
// of [Bundle], for a caller that has more to do between the comparison
// with the previous release and the signing.
func (r *Result) Sign(ctx context.Context, signer Signer, token *IDPToken) error {
	if signer == nil {
		return errors.New("no signer")
	}
	if r.Bundle != nil {
		return errors.New("the statement is signed already")
	}
	if token != nil {
		switch signer.(type) {
		case *Key, *KeyPair:
		default:
			return errors.New("an identity provider token goes beside a key's signature only")
		}
	}
	r.envelope = etdi.Bundle{Envelope: etdi.Envelope{PayloadType: etdi.PayloadType, Payload: r.Payload, Signatures: []etdi.Signature{}}}
	if err := signer.sign(ctx, r); err != nil {
		return err
	}
	if token != nil {
		if err := token.sign(ctx, r); err != nil {
			return err
		}
	}
	if !r.Sigstore {
		r.Bundle = r.envelope.Marshal()
	}
	return nil
}

// Prepare does what [Bundle] does before it signs: it builds the statement
// and compares it with opts.Previous. Its result has no bundle until
// [Result.Sign]; it also tells tools that sign the statement elsewhere
// what to sign ([Result.AttestInputs]), and an identity provider what to
// bind a token to ([Result.Binding]).
func Prepare(m *etdi.Manifest, opts BundleOptions) (*Result, error) {
	if opts.Previous == nil && len(opts.Remove) > 0 {
		return nil, errors.New("Remove needs Previous")
	}
	if opts.Previous != nil && opts.Sequence == 0 {
		issued := opts.IssuedAt
		if issued.IsZero() {
			opts.IssuedAt = time.Now()
			issued = opts.IssuedAt
		}
		opts.Sequence = max(uint64(max(issued.Unix(), 0)), opts.Previous.Sequence+1)
	}
	st, payload, err := Build(m, opts.Options)
	if err != nil {
		return nil, err
	}
	r := &Result{Statement: st, Payload: payload}
	if opts.Previous == nil {
		return r, nil
	}
	if r.Release, err = release.Compare(opts.Previous, st, opts.Remove); err != nil {
		return nil, &PreviousError{err}
	}
	if opts.Compared != nil {
		opts.Compared(r.Release)
	}
	if r.Release.Refused() {
		return nil, &RefusedError{r.Release}
	}
	return r, nil
}

func (k *Key) sign(ctx context.Context, r *Result) error {
	signer, pub, err := keys.LoadSigner(ctx, k.Ref, k.Password)
	if err != nil {
		return err
	}
	return (&KeyPair{signer, pub}).sign(ctx, r)
}

func (k *KeyPair) sign(_ context.Context, r *Result) error {
	sig, err := SignPayload(r.Payload, k.Signer, k.Public)
	if err != nil {
		return err
	}
	r.envelope.Envelope.Signatures = append(r.envelope.Envelope.Signatures, sig)
	r.KeyID, _ = keys.ID(k.Public)
	return nil
}

func (t *IDPToken) sign(ctx context.Context, r *Result) error {
	token := strings.TrimSpace(t.Token)
	if token == "" && t.Issuer != "" {
		var err error
		if token, err = idp.RequestToken(ctx, t.Client, t.Issuer, t.ClientID, t.ClientSecret, t.Resource, r.Statement, r.Payload); err != nil {
			return err
		}
		r.TokenIssuer = t.Issuer
	}
	if err := idp.CheckUnverifiedBinding(token, r.Payload); err != nil {
		return fmt.Errorf("the identity provider token does not fit this statement: %w", err)
	}
	if t.Audience != "" {
		if err := checkAudience(token, t.Audience); err != nil {
			return fmt.Errorf("the identity provider token is not for audience %q: %w", t.Audience, err)
		}
	}
	r.envelope.IDPToken = token
	r.Token = true
	return nil
}

func (k *Keyless) sign(ctx context.Context, r *Result) error {
	opts := k.Options
	if opts.IDToken == "" {
		var err error
		if opts.IDToken, err = keyless.IdentityToken(ctx, k.IdentityToken, k.Getenv); err != nil {
			return err
		}
	}
	body, err := keyless.Sign(ctx, r.Payload, opts)
	if err != nil {
		return fmt.Errorf("keyless signing: %w", err)
	}
	r.Bundle, r.Sigstore = body, true
	r.KeylessIdentity, r.KeylessIssuer, _ = keyless.IdentityOf(body)
	return nil
}

// By names who signed, for a message to the signer: "key sha256:…",
// "a token of ISSUER", both joined with "and", or the keyless
// certificate's identity and issuer.
func (r *Result) By() string {
	if r.Sigstore {
		if r.KeylessIdentity == "" && r.KeylessIssuer == "" {
			return "a keyless certificate"
		}
		return fmt.Sprintf("a keyless certificate for %s (issuer %s)", r.KeylessIdentity, r.KeylessIssuer)
	}
	var who []string
	if r.KeyID != "" {
		who = append(who, "key "+keys.ShortID(r.KeyID))
	}
	if r.Token {
		iss := r.TokenIssuer
		if iss == "" {
			iss = "the identity provider"
		}
		who = append(who, "a token of "+iss)
	}
	return strings.Join(who, " and ")
}

// Binding is what an identity provider token must carry to be bound to a
// statement (SPEC.md §13): its authorization_details, the scopes to ask
// for, and the digest of the payload.
type Binding struct {
	AuthorizationDetails []idp.Detail `json:"authorization_details"`
	Scope                string       `json:"scope"`
	PayloadDigest        string       `json:"payloadDigest"`
}

// Binding returns what a token must carry to be bound to r's statement.
func (r *Result) Binding() Binding {
	return Binding{[]idp.Detail{idp.DetailFor(r.Statement, r.Payload)}, strings.Join(idp.Scopes(r.Statement), " "), idp.PayloadDigest(r.Payload)}
}

// AttestInputs returns what a generic attestation tool (GitHub's attest
// action, cosign attest-blob) needs to produce the statement etdi would
// sign (docs/storage.md#history-and-checkpoints): the predicate as canonical JSON with a final
// newline, and the subjects in sha256sum's format.
func (r *Result) AttestInputs() (predicate, subjects []byte, err error) {
	v, err := strictjson.Parse(r.Payload)
	if err != nil {
		return nil, nil, err
	}
	pred := v.Get("predicate")
	if pred == nil {
		return nil, nil, fmt.Errorf("statement without a predicate")
	}
	var sb strings.Builder
	for _, t := range r.Statement.Tools {
		fmt.Fprintf(&sb, "%s  %s\n", t.Digest.Hex(), etdi.SubjectName(t.Name, t.Version))
	}
	return append(strictjson.AppendCanonical(nil, pred), '\n'), []byte(sb.String()), nil
}

// checkAudience reports whether the unverified claims of token name aud
// in their "aud" claim, a string or an array of strings.
func checkAudience(token, aud string) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("not a JWS compact token")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return fmt.Errorf("token claims: %v", err)
	}
	var claims struct {
		Aud any `json:"aud"`
	}
	if err := json.Unmarshal(b, &claims); err != nil {
		return fmt.Errorf("token claims: %v", err)
	}
	switch a := claims.Aud.(type) {
	case string:
		if a == aud {
			return nil
		}
	case []any:
		for _, v := range a {
			if v == aud {
				return nil
			}
		}
	}
	return errors.New("its aud claim does not name it")
}
