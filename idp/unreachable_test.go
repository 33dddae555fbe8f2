package idp

import (
	"errors"
	"net"
	"testing"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/trust"
)

// An identity provider that cannot be reached fails closed, and says so:
// the verifier reports it as unreachable, which the CLI turns into an
// operational error instead of a security finding. A provider that answers
// and refuses is never reported as unreachable.
func TestUnreachableProvider(t *testing.T) {
	st, payload := statement(t)
	unreachable := func(t *testing.T, v *Verifier) {
		t.Helper()
		var ue *UnreachableError
		if err := v.Unreachable(); !errors.As(err, &ue) {
			t.Fatalf("Unreachable() = %v", err)
		}
	}

	t.Run("endpoint answers 503", func(t *testing.T) {
		s := newIDP(t, keysAll...)
		s.down.Store(true)
		v := newVerifier()
		expectErr(t, v, signToken(t, keysAll[0], claims(s.URL, st, payload), nil), config(s), st, payload, finding.SignatureInvalid, "could not reach the identity provider")
		unreachable(t, v)
	})
	t.Run("nothing listens", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := "http://" + l.Addr().String()
		l.Close()
		cfg := &trust.IDP{Issuer: addr, Audience: "urn:etdi", Subjects: []string{"acme-ci"}}
		v := newVerifier()
		expectErr(t, v, signToken(t, keysAll[0], claims(addr, st, payload), nil), cfg, st, payload, finding.SignatureInvalid, "could not reach the identity provider")
		unreachable(t, v)
	})
	t.Run("introspection down", func(t *testing.T) {
		s := newIDP(t, keysAll...)
		cfg := config(s)
		cfg.Introspection = &trust.Introspection{Endpoint: s.URL + "/introspect", ClientID: "verifier", ClientSecretEnv: "INTROSPECTION_SECRET"}
		s.inStatus = 503
		v := newVerifier()
		expectErr(t, v, signToken(t, keysAll[0], claims(s.URL, st, payload), nil), cfg, st, payload, finding.SignatureInvalid, "introspection failed")
		unreachable(t, v)
	})
	t.Run("reachable and refusing", func(t *testing.T) {
		s := newIDP(t, keysAll...)
		cfg := config(s)
		v := newVerifier()
		c := claims(s.URL, st, payload)
		c["sub"] = "mallory"
		expectErr(t, v, signToken(t, keysAll[0], c, nil), cfg, st, payload, finding.SignatureInvalid, "not trusted")
		cfg.Introspection = &trust.Introspection{Endpoint: s.URL + "/introspect", ClientID: "verifier", ClientSecretEnv: "INTROSPECTION_SECRET"}
		s.inStatus = 400
		expectErr(t, v, signToken(t, keysAll[0], claims(s.URL, st, payload), nil), cfg, st, payload, finding.SignatureInvalid, "introspection failed")
		if err := v.Unreachable(); err != nil {
			t.Fatalf("a provider that answered is reported unreachable: %v", err)
		}
	})
}
