// Package sigstoretest runs a Sigstore instance on 127.0.0.1 for tests: an
// OIDC issuer whose tokens it mints, a Fulcio certificate authority and a
// Rekor transparency log speaking the public instance's HTTP APIs, and
// the trusted root (trusted_root.json) that verifies what they issue.
//
// The keys and certificates come from sigstore-go's virtual Sigstore
// (pkg/testing/ca): its root and Fulcio intermediate certificates, and its
// Rekor log key, which signs entry timestamps and inclusion checkpoints.
// The services are stand-ins for testing clients, not servers to deploy:
// Fulcio checks the token's signature, audience and expiry but not the
// proof of possession, and the log holds one entry per tree.
package sigstoretest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-openapi/runtime"
	"github.com/sigstore/rekor/pkg/generated/models"
	"github.com/sigstore/rekor/pkg/types"
	_ "github.com/sigstore/rekor/pkg/types/dsse/v0.0.1" // the dsse entry kind
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
)

// GitHubIssuer is the issuer of GitHub Actions' OIDC tokens.
const GitHubIssuer = "https://token.actions.githubusercontent.com"

// Instance is a running test Sigstore.
type Instance struct {
	// URL is the base URL of Fulcio and Rekor (one server serves both);
	// TokenURL serves GitHub Actions' OIDC token request API.
	URL      string
	TokenURL string
	// RequestToken is the bearer token the token URL wants.
	RequestToken string

	vs          *ca.VirtualSigstore
	fulcioRoot  *x509.Certificate
	fulcioInter *x509.Certificate
	fulcioKey   *ecdsa.PrivateKey
	oidcKey     *ecdsa.PrivateKey
	ca          *root.FulcioCertificateAuthority

	mu sync.Mutex
	// CertLifetime is how long a certificate is valid (10 minutes, as
	// Fulcio's). LogTimeOffset moves the log's integrated time, to make
	// a certificate that has expired when it is logged.
	CertLifetime  time.Duration
	LogTimeOffset time.Duration
	// WithCTLog lists a certificate transparency log in the trusted root;
	// the certificates this Fulcio issues carry no signed certificate
	// timestamp of it.
	WithCTLog bool
	// Tokens and Entries count the tokens served and the log entries made.
	Tokens, Entries int
	// GitHubClaims are the claims of tokens the token URL serves.
	GitHubClaims map[string]any
}

// New starts an instance; it stops when the test ends.
func New(t testing.TB) *Instance {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	rootCert, rootKey, err := ca.GenerateRootCa()
	if err != nil {
		t.Fatal(err)
	}
	inter, interKey, err := ca.GenerateFulcioIntermediate(rootCert, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	oidcKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	in := &Instance{vs: vs, fulcioRoot: rootCert, fulcioInter: inter, fulcioKey: interKey, oidcKey: oidcKey,
		CertLifetime: 10 * time.Minute, RequestToken: "request-" + randHex(8)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v2/signingCert", in.signingCert)
	mux.HandleFunc("POST /api/v1/log/entries", in.logEntry)
	mux.HandleFunc("GET /token", in.githubToken)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	in.URL = "http://" + ln.Addr().String()
	in.TokenURL = in.URL + "/token?api-version=2.0"
	in.ca = &root.FulcioCertificateAuthority{Root: rootCert, Intermediates: []*x509.Certificate{inter},
		ValidityPeriodStart: time.Now().Add(-time.Hour), ValidityPeriodEnd: time.Now().Add(24 * time.Hour), URI: in.URL}
	in.GitHubClaims = GitHubClaims("acme/weather", "refs/tags/v1.0.0", ".github/workflows/release.yml")
	return in
}

// GitHubClaims are the claims of a GitHub Actions token for a workflow of
// repo run at ref.
func GitHubClaims(repo, ref, workflow string) map[string]any {
	return map[string]any{
		"iss":              GitHubIssuer,
		"sub":              "repo:" + repo + ":ref:" + ref,
		"repository":       repo,
		"ref":              ref,
		"job_workflow_ref": repo + "/" + workflow + "@" + ref,
	}
}

// GitHubIdentity is the certificate identity Fulcio gives a GitHub Actions
// workflow: the workflow file's URL at the ref.
func GitHubIdentity(repo, ref, workflow string) string {
	return "https://github.com/" + repo + "/" + workflow + "@" + ref
}

// TrustedRoot returns the trusted_root.json that verifies what this
// instance issues.
func (in *Instance) TrustedRoot(t testing.TB) []byte {
	t.Helper()
	// The virtual log's id is the hex of its key's digest; a trusted root
	// holds the digest itself.
	rawIDs := func(in map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
		out := map[string]*root.TransparencyLog{}
		for id, l := range in {
			raw, err := hex.DecodeString(id)
			if err != nil {
				t.Fatal(err)
			}
			c := *l
			c.ID = raw
			out[id] = &c
		}
		return out
	}
	var ctlogs map[string]*root.TransparencyLog
	if in.WithCTLog {
		ctlogs = rawIDs(in.vs.CTLogs())
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, []root.CertificateAuthority{in.ca},
		ctlogs, in.vs.TimestampingAuthorities(), rawIDs(in.vs.RekorLogs()))
	if err != nil {
		t.Fatal(err)
	}
	data, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Token mints an OIDC token for Fulcio (audience "sigstore") with the given
// claims; "iss" and "sub" are required.
func (in *Instance) Token(claims map[string]any) string {
	c := map[string]any{"aud": "sigstore", "iat": time.Now().Unix(), "exp": time.Now().Add(5 * time.Minute).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	return in.jwt(c)
}

func (in *Instance) jwt(claims map[string]any) string {
	head := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256","typ":"JWT"}`))
	body, _ := json.Marshal(claims)
	signing := head + "." + base64.RawURLEncoding.EncodeToString(body)
	h := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, in.oidcKey, h[:])
	if err != nil {
		panic(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// claimsOf verifies a token this instance minted and returns its claims.
func (in *Instance) claimsOf(token string) (map[string]any, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("not a JWT")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return nil, fmt.Errorf("bad signature encoding")
	}
	h := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(&in.oidcKey.PublicKey, h[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return nil, fmt.Errorf("token signature does not verify")
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	var c map[string]any
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, err
	}
	if c["aud"] != "sigstore" {
		return nil, fmt.Errorf("token audience is %v, not sigstore", c["aud"])
	}
	if exp, _ := c["exp"].(float64); int64(exp) < time.Now().Unix() {
		return nil, fmt.Errorf("token expired")
	}
	return c, nil
}

// githubToken serves GitHub Actions' token request API: GET with the
// request token as bearer and the audience as a query parameter.
func (in *Instance) githubToken(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+in.RequestToken {
		http.Error(w, "bad request token", http.StatusUnauthorized)
		return
	}
	aud := r.URL.Query().Get("audience")
	if aud != "sigstore" {
		http.Error(w, "audience must be sigstore", http.StatusBadRequest)
		return
	}
	in.mu.Lock()
	in.Tokens++
	claims := in.GitHubClaims
	in.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]string{"value": in.Token(claims)})
}

var (
	oidIssuerV1   = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
	oidIssuerV2   = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
	oidSourceRepo = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 12}
	oidSourceRef  = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 14}
	oidBuildCfg   = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 18}
)

func utf8Ext(oid asn1.ObjectIdentifier, s string) pkix.Extension {
	v, err := asn1.MarshalWithParams(s, "utf8")
	if err != nil {
		panic(err)
	}
	return pkix.Extension{Id: oid, Value: v}
}

// signingCert serves Fulcio's v2 signingCert API.
func (in *Instance) signingCert(w http.ResponseWriter, r *http.Request) {
	claims, err := in.claimsOf(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var req struct {
		PublicKeyRequest struct {
			PublicKey struct {
				Content string `json:"content"`
			} `json:"publicKey"`
		} `json:"publicKeyRequest"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	block, _ := pem.Decode([]byte(req.PublicKeyRequest.PublicKey.Content))
	if block == nil {
		http.Error(w, "no PEM public key", http.StatusBadRequest)
		return
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	iss, _ := claims["iss"].(string)
	sub, _ := claims["sub"].(string)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		NotBefore:    time.Now().Add(-time.Second),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		ExtraExtensions: []pkix.Extension{
			{Id: oidIssuerV1, Value: []byte(iss)},
			utf8Ext(oidIssuerV2, iss),
		},
	}
	in.mu.Lock()
	tmpl.NotAfter = tmpl.NotBefore.Add(in.CertLifetime)
	in.mu.Unlock()
	// As Fulcio: a GitHub Actions token's identity is its workflow at its
	// ref; an email is an email address; any other subject a URI.
	if wf, ok := claims["job_workflow_ref"].(string); ok {
		u, _ := url.Parse("https://github.com/" + wf)
		tmpl.URIs = []*url.URL{u}
		repo, _ := claims["repository"].(string)
		ref, _ := claims["ref"].(string)
		tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, utf8Ext(oidSourceRepo, "https://github.com/"+repo),
			utf8Ext(oidSourceRef, ref), utf8Ext(oidBuildCfg, "https://github.com/"+wf))
	} else if strings.Contains(sub, "@") && !strings.Contains(sub, "/") {
		tmpl.EmailAddresses = []string{sub}
	} else {
		u, err := url.Parse(sub)
		if err != nil || u.Scheme == "" {
			http.Error(w, "subject is neither an email address nor a URI", http.StatusBadRequest)
			return
		}
		tmpl.URIs = []*url.URL{u}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, in.fulcioInter, pub, in.fulcioKey)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var chain []string
	for _, c := range [][]byte{der, in.fulcioInter.Raw, in.fulcioRoot.Raw} {
		chain = append(chain, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c})))
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"signedCertificateDetachedSct": map[string]any{"chain": map[string]any{"certificates": chain}}})
}

// logEntry serves Rekor's v1 create-entry API for dsse entries.
func (in *Instance) logEntry(w http.ResponseWriter, r *http.Request) {
	ctx := context.Background()
	pe, err := models.UnmarshalProposedEntry(io.LimitReader(r.Body, 1<<20), runtime.JSONConsumer())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	entry, err := types.CreateVersionedEntry(pe)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	body, err := types.CanonicalizeEntry(ctx, entry)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	logID, err := in.vs.RekorLogID()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	in.mu.Lock()
	in.Entries++
	integrated := time.Now().Add(in.LogTimeOffset).Unix()
	in.mu.Unlock()
	// The one-entry tree the virtual log proves inclusion in has the
	// entry at index 0.
	const logIndex = 0
	set, err := in.vs.RekorSignPayload(tlog.RekorPayload{Body: base64.StdEncoding.EncodeToString(body),
		IntegratedTime: integrated, LogIndex: logIndex, LogID: logID})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	proof, err := in.vs.GetInclusionProof(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	verification := &models.LogEntryAnonVerification{SignedEntryTimestamp: set, InclusionProof: proof}
	idx := int64(logIndex)
	le := models.LogEntryAnon{Body: base64.StdEncoding.EncodeToString(body), IntegratedTime: &integrated,
		LogID: &logID, LogIndex: &idx, Verification: verification}
	leaf := sha256.Sum256(append([]byte{0}, body...))
	uuid := hex.EncodeToString(leaf[:])
	var out bytes.Buffer
	json.NewEncoder(&out).Encode(map[string]models.LogEntryAnon{uuid: le})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("ETag", uuid)
	w.Header().Set("Location", "/api/v1/log/entries/"+uuid)
	w.WriteHeader(http.StatusCreated)
	w.Write(out.Bytes())
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
