package idp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/atomicfile"
	"github.com/etdi-dev/etdi/strictjson"
	"github.com/etdi-dev/etdi/trust"
)

// Limits of network reads.
const (
	maxDocument    = 1 << 20
	fetchTimeout   = 10 * time.Second
	defaultMaxAge  = 5 * time.Minute
	maxMaxAge      = 24 * time.Hour
	refreshBackoff = 30 * time.Second
)

// KeySet is a parsed JWKS: public keys by kid.
type KeySet struct {
	keys map[string]crypto.PublicKey
	// order keeps kids in document order, for tokens without kid.
	order []string
}

// ParseJWKS parses a JSON Web Key Set. Keys of other types, private keys
// and keys meant only for encryption are skipped; a set without one usable
// signing key is an error.
func ParseJWKS(data []byte) (*KeySet, error) {
	if _, err := strictjson.Parse(data); err != nil { // strict: no duplicate keys
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	var doc struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	ks := &KeySet{keys: map[string]crypto.PublicKey{}}
	for i, k := range doc.Keys {
		if use, _ := k["use"].(string); use == "enc" {
			continue
		}
		if _, private := k["d"]; private {
			return nil, fmt.Errorf("JWKS key %d holds private key material", i)
		}
		pub, err := jwkPublic(k)
		if err != nil {
			continue // an algorithm etdi does not accept
		}
		kid, _ := k["kid"].(string)
		if _, dup := ks.keys[kid]; dup {
			return nil, fmt.Errorf("JWKS lists kid %q twice", kid)
		}
		ks.keys[kid] = pub
		ks.order = append(ks.order, kid)
	}
	if len(ks.keys) == 0 {
		return nil, errors.New("JWKS has no usable signing key (RSA, EC P-256/P-384, Ed25519)")
	}
	return ks, nil
}

func b64(k map[string]any, name string) ([]byte, error) {
	s, ok := k[name].(string)
	if !ok {
		return nil, fmt.Errorf("missing %s", name)
	}
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

func jwkPublic(k map[string]any) (crypto.PublicKey, error) {
	switch k["kty"] {
	case "RSA":
		n, err := b64(k, "n")
		if err != nil {
			return nil, err
		}
		e, err := b64(k, "e")
		if err != nil || len(e) > 4 {
			return nil, errors.New("bad e")
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < 2048 {
			return nil, errors.New("RSA key under 2048 bits")
		}
		return pub, nil
	case "EC":
		var curve elliptic.Curve
		switch k["crv"] {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		default:
			return nil, errors.New("curve not accepted")
		}
		x, err := b64(k, "x")
		if err != nil {
			return nil, err
		}
		y, err := b64(k, "y")
		if err != nil {
			return nil, err
		}
		size := (curve.Params().BitSize + 7) / 8
		if len(x) != size || len(y) != size {
			return nil, errors.New("bad coordinates")
		}
		raw := append(append([]byte{4}, x...), y...)
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, raw)
		if err != nil {
			return nil, err
		}
		return pub, nil
	case "OKP":
		if k["crv"] != "Ed25519" {
			return nil, errors.New("curve not accepted")
		}
		x, err := b64(k, "x")
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, errors.New("bad Ed25519 key")
		}
		return ed25519.PublicKey(x), nil
	}
	return nil, errors.New("key type not accepted")
}

// Key returns the key with the given kid. An empty kid selects the only
// key of a one-key set.
func (ks *KeySet) Key(kid string) (crypto.PublicKey, bool) {
	if kid == "" && len(ks.order) == 1 {
		return ks.keys[ks.order[0]], true
	}
	k, ok := ks.keys[kid]
	return k, ok
}

// CachedKeys is a key set fetched from an issuer, with its lifetime.
type CachedKeys struct {
	JWKSURI   string          `json:"jwksUri"`
	JWKS      json.RawMessage `json:"jwks"`
	Fetched   time.Time       `json:"fetched"`
	Expires   time.Time       `json:"expires"`
	Refreshed time.Time       `json:"refreshed"`
}

// Cache keeps fetched key sets between runs.
type Cache interface {
	Load(issuer string) (*CachedKeys, bool)
	Store(issuer string, c *CachedKeys) error
}

// FileCache stores key sets as JSON files in Dir, one per issuer.
type FileCache struct{ Dir string }

func (c FileCache) path(issuer string) string {
	return filepath.Join(c.Dir, strings.TrimPrefix(PayloadDigest([]byte(issuer)), "sha256:")[:32]+".json")
}

// Load reads the cached keys of issuer.
func (c FileCache) Load(issuer string) (*CachedKeys, bool) {
	b, err := os.ReadFile(c.path(issuer))
	if err != nil {
		return nil, false
	}
	var ck CachedKeys
	if json.Unmarshal(b, &ck) != nil {
		return nil, false
	}
	return &ck, true
}

// Store writes the cached keys of issuer.
func (c FileCache) Store(issuer string, ck *CachedKeys) error {
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(ck)
	if err != nil {
		return err
	}
	return atomicfile.Write(c.path(issuer), b, 0o600)
}

// MemCache is a [Cache] in memory.
type MemCache struct {
	mu sync.Mutex
	m  map[string]*CachedKeys
}

// Load returns the cached keys of issuer.
func (c *MemCache) Load(issuer string) (*CachedKeys, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ck, ok := c.m[issuer]
	return ck, ok
}

// Store caches keys for issuer.
func (c *MemCache) Store(issuer string, ck *CachedKeys) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*CachedKeys{}
	}
	c.m[issuer] = ck
	return nil
}

// checkEndpoint refuses endpoints that are not https, except on loopback.
func checkEndpoint(what, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%s %q is not a URL", what, raw)
	}
	if etdi.SecureURL(u) {
		return nil
	}
	return fmt.Errorf("%s %q must use https (http only on loopback)", what, raw)
}

// getJSON fetches a document of at most maxDocument bytes and returns it
// with its Cache-Control max-age (-1 for no-store).
func getJSON(ctx context.Context, client *http.Client, raw string) ([]byte, time.Duration, error) {
	if client == nil {
		client = &http.Client{Timeout: fetchTimeout}
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, &UnreachableError{raw, err}
	}
	defer resp.Body.Close()
	if unreachableStatus(resp.StatusCode) {
		return nil, 0, &UnreachableError{raw, fmt.Errorf("%s", resp.Status)}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("GET %s: %s", raw, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return nil, 0, err
	}
	if len(b) > maxDocument {
		return nil, 0, fmt.Errorf("GET %s: larger than %d bytes", raw, maxDocument)
	}
	return b, maxAge(resp.Header.Get("Cache-Control")), nil
}

// maxAge reads max-age from Cache-Control: -1 for no-store or no-cache,
// the default when absent, at most a day.
func maxAge(cc string) time.Duration {
	age := defaultMaxAge
	for _, d := range strings.Split(cc, ",") {
		d = strings.TrimSpace(strings.ToLower(d))
		switch {
		case d == "no-store" || d == "no-cache":
			return -1
		case strings.HasPrefix(d, "max-age="):
			if n, err := strconv.Atoi(strings.TrimPrefix(d, "max-age=")); err == nil && n >= 0 {
				age = time.Duration(n) * time.Second
			}
		}
	}
	return min(age, maxMaxAge)
}

// Discovery is the part of an OpenID Provider's metadata etdi uses.
type Discovery struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	TokenEndpoint         string `json:"token_endpoint"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

// Discover reads issuer/.well-known/openid-configuration and checks that
// it names the same issuer and https (or loopback) endpoints.
func Discover(ctx context.Context, client *http.Client, issuer string) (*Discovery, error) {
	if err := trust.CheckIssuer(issuer); err != nil {
		return nil, err
	}
	b, _, err := getJSON(ctx, client, strings.TrimSuffix(issuer, "/")+"/.well-known/openid-configuration")
	if err != nil {
		return nil, fmt.Errorf("OIDC discovery: %w", err)
	}
	if _, err := strictjson.Parse(b); err != nil {
		return nil, fmt.Errorf("OIDC discovery: %w", err)
	}
	var d Discovery
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("OIDC discovery: %w", err)
	}
	if d.Issuer != issuer {
		return nil, fmt.Errorf("OIDC discovery: the document is for issuer %q, not %q", d.Issuer, issuer)
	}
	for what, u := range map[string]string{"jwks_uri": d.JWKSURI, "token_endpoint": d.TokenEndpoint} {
		if u == "" {
			continue
		}
		if err := checkEndpoint(what, u); err != nil {
			return nil, fmt.Errorf("OIDC discovery: %w", err)
		}
	}
	return &d, nil
}
