package verify

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/trust"
)

// tokenVerifier answers every token with id or err, and records what it
// was asked.
type tokenVerifier struct {
	id    *TokenIdentity
	err   error
	token string
	cfg   *trust.IDP
}

func (v *tokenVerifier) VerifyToken(_ context.Context, token string, cfg *trust.IDP, _ []byte, _ *etdi.Statement) (*TokenIdentity, error) {
	v.token, v.cfg = token, cfg
	return v.id, v.err
}

// tokenPolicy trusts acme's and globex's identity provider, each for its
// own subject.
func tokenPolicy() (*trust.Policy, *trust.Provider) {
	p := &trust.Policy{Providers: []trust.Provider{
		{ID: "acme", IDP: &trust.IDP{Issuer: "https://idp.example", Subjects: []string{"acme-ci"}}},
		{ID: "globex", IDP: &trust.IDP{Issuer: "https://idp.example", Subjects: []string{"globex-ci"}}},
	}}
	return p, &p.Providers[0]
}

func tokenStatement() *etdi.Statement {
	return &etdi.Statement{Provider: etdi.Provider{ID: "acme"}, Server: etdi.Server{Name: "weather"},
		Tools: []etdi.Tool{{Name: "get_forecast", Version: "1.0.0"}}}
}

// A bundle whose provider is trusted by its identity provider's token is
// refused without a token, and without a way to verify one (fail closed):
// neither is an identity.
func TestTokenMissingOrUnverifiable(t *testing.T) {
	p, acme := tokenPolicy()
	st := tokenStatement()
	id, f := checkToken(&etdi.Bundle{}, st, p, acme, Options{Tokens: &tokenVerifier{id: &TokenIdentity{Subject: "acme-ci"}}}, "tools x")
	if id != nil || f == nil || f.Kind != finding.SignatureMissing || f.Severity != finding.Error {
		t.Errorf("no token: %+v %+v", id, f)
	}
	id, f = checkToken(&etdi.Bundle{IDPToken: "eyJ.x.y"}, st, p, acme, Options{}, "tools x")
	if id != nil || f == nil || f.Kind != finding.SignatureInvalid || f.Severity != finding.Error || !strings.Contains(f.Message, "no token verifier") {
		t.Errorf("no verifier: %+v %+v", id, f)
	}
}

// What the verifier refuses is no identity: its kind is kept (an expired
// token is expired), and an error of no kind is an invalid signature.
func TestTokenRefused(t *testing.T) {
	p, acme := tokenPolicy()
	st := tokenStatement()
	for _, tc := range []struct {
		err  error
		kind finding.Kind
	}{
		{&TokenError{Kind: finding.Expired, Msg: "token expired"}, finding.Expired},
		{&TokenError{Kind: finding.Revoked, Msg: "jti revoked"}, finding.Revoked},
		{errors.New("signature does not verify"), finding.SignatureInvalid},
	} {
		id, f := checkToken(&etdi.Bundle{IDPToken: "eyJ.x.y"}, st, p, acme, Options{Tokens: &tokenVerifier{err: tc.err}}, "tools x")
		if id != nil || f == nil || f.Kind != tc.kind || f.Severity != finding.Error || !strings.Contains(f.Message, tc.err.Error()) {
			t.Errorf("%v: %+v %+v, want an error of kind %s", tc.err, id, f, tc.kind)
		}
	}
}

// A valid token whose subject is trusted only for another provider is
// impersonation of the claimed provider, naming the one it is trusted for;
// a subject trusted for no provider stays an invalid signature.
func TestTokenSubjectOfAnotherProvider(t *testing.T) {
	p, acme := tokenPolicy()
	st := tokenStatement()
	other := &TokenError{Kind: finding.SignatureInvalid, Msg: "subject not trusted", UntrustedSubject: true, Issuer: "https://idp.example", Subject: "globex-ci"}
	_, f := checkToken(&etdi.Bundle{IDPToken: "eyJ.x.y"}, st, p, acme, Options{Tokens: &tokenVerifier{err: other}}, "tools x")
	if f == nil || f.Kind != finding.Impersonation || !slices.Equal(f.TrustedFor, []string{"globex"}) || !strings.Contains(f.Message, `"globex-ci"`) {
		t.Errorf("subject of globex claiming acme: %+v", f)
	}
	nobody := &TokenError{Kind: finding.SignatureInvalid, Msg: "subject not trusted", UntrustedSubject: true, Issuer: "https://idp.example", Subject: "mallory"}
	_, f = checkToken(&etdi.Bundle{IDPToken: "eyJ.x.y"}, st, p, acme, Options{Tokens: &tokenVerifier{err: nobody}}, "tools x")
	if f == nil || f.Kind != finding.SignatureInvalid || len(f.TrustedFor) != 0 {
		t.Errorf("subject trusted for nobody: %+v", f)
	}
	// The same subject from another issuer is not globex's.
	elsewhere := &TokenError{Kind: finding.SignatureInvalid, Msg: "subject not trusted", UntrustedSubject: true, Issuer: "https://evil.example", Subject: "globex-ci"}
	_, f = checkToken(&etdi.Bundle{IDPToken: "eyJ.x.y"}, st, p, acme, Options{Tokens: &tokenVerifier{err: elsewhere}}, "tools x")
	if f == nil || f.Kind != finding.SignatureInvalid {
		t.Errorf("globex's subject from another issuer: %+v", f)
	}
}

// An accepted token is the identity, verified against the claimed
// provider's identity provider.
func TestTokenAccepted(t *testing.T) {
	p, acme := tokenPolicy()
	v := &tokenVerifier{id: &TokenIdentity{Issuer: "https://idp.example", Subject: "acme-ci"}}
	id, f := checkToken(&etdi.Bundle{IDPToken: "eyJ.x.y"}, tokenStatement(), p, acme, Options{Tokens: v}, "tools x")
	if f != nil || id == nil || id.Subject != "acme-ci" {
		t.Fatalf("accepted token: %+v %+v", id, f)
	}
	if v.token != "eyJ.x.y" || v.cfg != acme.IDP {
		t.Errorf("verified %q against %+v, want the bundle's token against acme's identity provider", v.token, v.cfg)
	}
}
