package idp

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/trust"
	"github.com/etdi-dev/etdi/verify"
	"github.com/golang-jwt/jwt/v5"
)

// Algorithms are the only JWS algorithms accepted: asymmetric, no "none",
// no HMAC.
var Algorithms = []string{"RS256", "PS256", "ES256", "ES384", "EdDSA"}

// Leeway tolerates clock differences for exp, nbf and iat.
const Leeway = 60 * time.Second

// Verifier checks identity provider tokens (it implements
// [verify.TokenVerifier]).
type Verifier struct {
	HTTP  *http.Client
	Cache Cache
	// Now is the verification time; nil means time.Now.
	Now func() time.Time
	// Getenv reads the introspection client secret; nil means os.Getenv.
	Getenv func(string) string

	mu sync.Mutex
	// parsed memoizes key sets by their JWKS text.
	parsed map[string]*KeySet

	umu         sync.Mutex
	unreachable *UnreachableError
}

// keySet parses a JWKS once per distinct text.
func (v *Verifier) keySet(jwks []byte) (*KeySet, error) {
	if ks, ok := v.parsed[string(jwks)]; ok {
		return ks, nil
	}
	ks, err := ParseJWKS(jwks)
	if err != nil {
		return nil, err
	}
	if v.parsed == nil || len(v.parsed) > 64 {
		v.parsed = map[string]*KeySet{}
	}
	v.parsed[string(jwks)] = ks
	return ks, nil
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func (v *Verifier) client() *http.Client {
	if v.HTTP != nil {
		return v.HTTP
	}
	return &http.Client{Timeout: fetchTimeout}
}

func tokenErr(kind finding.Kind, format string, args ...any) *verify.TokenError {
	return &verify.TokenError{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// VerifyToken validates token for the provider configuration cfg and the
// exact payload of statement st.
func (v *Verifier) VerifyToken(ctx context.Context, token string, cfg *trust.IDP, payload []byte, st *etdi.Statement) (*verify.TokenIdentity, error) {
	if len(token) > 64<<10 {
		return nil, tokenErr(finding.SignatureInvalid, "token longer than 64 KiB")
	}
	var keyErr error
	keyfunc := func(t *jwt.Token) (any, error) {
		for _, h := range []string{"jku", "x5u", "jwk", "x5c"} {
			if _, ok := t.Header[h]; ok {
				return nil, fmt.Errorf("the token names its own key (%q header); etdi only uses the issuer's configured keys", h)
			}
		}
		kid, _ := t.Header["kid"].(string)
		k, err := v.key(ctx, cfg, kid)
		if err != nil {
			keyErr = err
		}
		return k, err
	}
	claims := jwt.MapClaims{}
	p := jwt.NewParser(jwt.WithValidMethods(Algorithms), jwt.WithIssuer(cfg.Issuer), jwt.WithAudience(cfg.Audience),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(Leeway), jwt.WithTimeFunc(v.now))
	if _, err := p.ParseWithClaims(token, claims, keyfunc); err != nil {
		switch {
		case keyErr != nil:
			return nil, tokenErr(finding.SignatureInvalid, "identity provider token: %v", keyErr)
		case errors.Is(err, jwt.ErrTokenExpired):
			return nil, tokenErr(finding.Expired, "identity provider token expired: %v", err)
		case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
			return nil, tokenErr(finding.Expired, "identity provider token is not valid yet: %v", err)
		}
		return nil, tokenErr(finding.SignatureInvalid, "identity provider token: %v", err)
	}
	id := &verify.TokenIdentity{Issuer: cfg.Issuer}
	claim := cfg.SubjectClaim
	if claim == "" {
		claim = "sub"
	}
	id.Subject, _ = claims[claim].(string)
	if id.Subject == "" {
		return nil, tokenErr(finding.SignatureInvalid, "identity provider token has no %q claim", claim)
	}
	id.JTI, _ = claims["jti"].(string)
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		id.Expires = exp.Time
	}
	if slices.Contains(cfg.DenySubjects, id.Subject) {
		return nil, tokenErr(finding.Revoked, "subject %q is on the trust policy's deny-list", id.Subject)
	}
	if id.JTI != "" && slices.Contains(cfg.DenyJTI, id.JTI) {
		return nil, tokenErr(finding.Revoked, "token %q is on the trust policy's deny-list", id.JTI)
	}
	if !slices.Contains(cfg.Subjects, id.Subject) {
		return nil, &verify.TokenError{Kind: finding.SignatureInvalid, UntrustedSubject: true, Issuer: cfg.Issuer, Subject: id.Subject,
			Msg: fmt.Sprintf("subject %q of issuer %s is not trusted for provider %q", id.Subject, cfg.Issuer, st.Provider.ID)}
	}
	if err := checkBinding(claims["authorization_details"], payload, st); err != nil {
		return nil, tokenErr(finding.SignatureInvalid, "identity provider token is not bound to this statement: %v", err)
	}
	id.Scopes = tokenScopes(claims)
	var missing []string
	for _, s := range Scopes(st) {
		if !slices.Contains(id.Scopes, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return nil, tokenErr(finding.SignatureInvalid, "identity provider token does not grant scope(s) %s that the statement declares", strings.Join(missing, ", "))
	}
	if cfg.Introspection != nil {
		if err := v.introspect(ctx, cfg.Introspection, token); err != nil {
			return nil, err
		}
	}
	return id, nil
}

func tokenScopes(c jwt.MapClaims) []string {
	if s, ok := c["scope"].(string); ok {
		return strings.Fields(s)
	}
	var out []string
	if a, ok := c["scp"].([]any); ok {
		for _, x := range a {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// key returns the issuer's key with kid: from the pinned JWKS, or from the
// cached or fetched one. An unknown kid triggers at most one refresh per
// refreshBackoff; an unreachable JWKS endpoint falls back to cached keys
// within their lifetime and otherwise fails closed.
func (v *Verifier) key(ctx context.Context, cfg *trust.IDP, kid string) (crypto.PublicKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(cfg.JWKS) > 0 {
		ks, err := v.keySet(cfg.JWKS)
		if err != nil {
			return nil, fmt.Errorf("pinned JWKS: %w", err)
		}
		if k, ok := ks.Key(kid); ok {
			return k, nil
		}
		return nil, fmt.Errorf("kid %q is not in the pinned JWKS", kid)
	}
	now := v.now()
	cached, ok := v.cacheLoad(cfg.Issuer)
	if ok && now.Before(cached.Expires) {
		if ks, err := v.keySet(cached.JWKS); err == nil {
			if k, found := ks.Key(kid); found {
				return k, nil
			}
			if now.Sub(cached.Refreshed) < refreshBackoff {
				return nil, fmt.Errorf("kid %q is not among the issuer's keys (refreshed %s ago)", kid, now.Sub(cached.Refreshed).Round(time.Second))
			}
		}
	}
	fresh, err := v.fetchKeys(ctx, cfg.Issuer, cached)
	if err != nil {
		if ok && now.Before(cached.Expires) {
			if ks, perr := v.keySet(cached.JWKS); perr == nil {
				if k, found := ks.Key(kid); found {
					return k, nil
				}
			}
		}
		var ue *UnreachableError
		if errors.As(err, &ue) {
			v.noteUnreachable(ue)
		}
		return nil, fmt.Errorf("cannot get the issuer's keys (%v) and no cached key %q within its lifetime", err, kid)
	}
	ks, err := v.keySet(fresh.JWKS)
	if err != nil {
		return nil, err
	}
	if k, found := ks.Key(kid); found {
		return k, nil
	}
	return nil, fmt.Errorf("kid %q is not among the issuer's keys", kid)
}

func (v *Verifier) cacheLoad(issuer string) (*CachedKeys, bool) {
	if v.Cache == nil {
		return nil, false
	}
	return v.Cache.Load(issuer)
}

func (v *Verifier) fetchKeys(ctx context.Context, issuer string, old *CachedKeys) (*CachedKeys, error) {
	jwksURI := ""
	if old != nil {
		jwksURI = old.JWKSURI
	}
	if jwksURI == "" {
		d, err := Discover(ctx, v.client(), issuer)
		if err != nil {
			return nil, err
		}
		if d.JWKSURI == "" {
			return nil, errors.New("OIDC discovery: no jwks_uri")
		}
		jwksURI = d.JWKSURI
	}
	b, age, err := getJSON(ctx, v.client(), jwksURI)
	if err != nil {
		return nil, err
	}
	if _, err := ParseJWKS(b); err != nil {
		return nil, err
	}
	now := v.now()
	ck := &CachedKeys{JWKSURI: jwksURI, JWKS: b, Fetched: now, Expires: now.Add(max(age, 0)), Refreshed: now}
	if v.Cache != nil && age > 0 {
		v.Cache.Store(issuer, ck) // a cache that cannot be written only costs a fetch next time
	}
	return ck, nil
}

// introspect asks the RFC 7662 endpoint whether the token is active.
func (v *Verifier) introspect(ctx context.Context, in *trust.Introspection, token string) error {
	if err := checkEndpoint("introspection endpoint", in.Endpoint); err != nil {
		return tokenErr(finding.SignatureInvalid, "%v", err)
	}
	getenv := v.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	secret := getenv(in.ClientSecretEnv)
	if secret == "" {
		return tokenErr(finding.SignatureInvalid, "introspection: %s is not set", in.ClientSecretEnv)
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.Endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return tokenErr(finding.SignatureInvalid, "introspection: %v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(in.ClientID), url.QueryEscape(secret))
	resp, err := v.client().Do(req)
	if err != nil {
		ue := &UnreachableError{in.Endpoint, err}
		v.noteUnreachable(ue)
		return tokenErr(finding.SignatureInvalid, "introspection failed, refusing the token: %v", ue)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	if unreachableStatus(resp.StatusCode) {
		ue := &UnreachableError{in.Endpoint, fmt.Errorf("%s", resp.Status)}
		v.noteUnreachable(ue)
		return tokenErr(finding.SignatureInvalid, "introspection failed, refusing the token: %v", ue)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		json.Unmarshal(b, &e)
		return tokenErr(finding.SignatureInvalid, "introspection failed (%s: %s %s), refusing the token", resp.Status, e.Error, e.Description)
	}
	var r struct {
		Active *bool `json:"active"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Active == nil {
		return tokenErr(finding.SignatureInvalid, "introspection answer without \"active\", refusing the token")
	}
	if !*r.Active {
		return tokenErr(finding.Revoked, "the identity provider reports the token inactive (revoked or expired)")
	}
	return nil
}

// RequestToken obtains a token with the client credentials grant, asking
// for the statement's scopes and binding it with an authorization_details
// entry. resource is sent as the RFC 8707 resource indicator (often the
// audience).
func RequestToken(ctx context.Context, client *http.Client, issuer, clientID, secret, resource string, st *etdi.Statement, payload []byte) (string, error) {
	if client == nil {
		client = &http.Client{Timeout: fetchTimeout}
	}
	d, err := Discover(ctx, client, issuer)
	if err != nil {
		return "", err
	}
	if d.TokenEndpoint == "" {
		return "", errors.New("OIDC discovery: no token_endpoint")
	}
	detail, err := json.Marshal([]Detail{DetailFor(st, payload)})
	if err != nil {
		return "", err
	}
	form := url.Values{"grant_type": {"client_credentials"}, "authorization_details": {string(detail)}}
	if s := Scopes(st); len(s) > 0 {
		form.Set("scope", strings.Join(s, " "))
	}
	if resource != "" {
		form.Set("resource", resource)
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("token request: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	var r struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	json.Unmarshal(b, &r)
	if resp.StatusCode != http.StatusOK || r.AccessToken == "" {
		return "", fmt.Errorf("token request refused (%s): %s %s", resp.Status, r.Error, r.Description)
	}
	return r.AccessToken, nil
}
