// Package tuftest builds a TUF repository (root, targets, snapshot and
// timestamp metadata signed with test keys, consistent snapshots) that
// publishes a Sigstore trusted_root.json, and serves it on 127.0.0.1, so
// that tests fetch trusted roots through a real TUF client without the
// network. Tests can publish new versions, expire the timestamp, roll the
// repository back or tamper with the target.
package tuftest

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"
)

// Target is the name of the target Sigstore publishes its trusted root as.
const Target = "trusted_root.json"

// Repo is a TUF repository served on 127.0.0.1.
type Repo struct {
	// URL is the repository's base URL (the TUF mirror).
	URL string
	// Root is version 1 of root.json: the trust anchor a client starts from.
	Root []byte
	// Requests counts the HTTP requests served.
	Requests int

	dir    string
	signer signature.Signer
	key    *metadata.Key
	mu     sync.Mutex

	version int64
	expires time.Time
	// published holds each version's files, name to content, so that a
	// test can serve an earlier one (a rollback).
	published []map[string][]byte
}

// New builds a repository publishing target as trusted_root.json (version
// 1 of every role, valid for a year) and serves it until the test ends.
func New(t testing.TB, target []byte) *Repo {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signature.LoadSigner(priv, crypto.Hash(0))
	if err != nil {
		t.Fatal(err)
	}
	key, err := metadata.KeyFromPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	r := &Repo{dir: t.TempDir(), signer: signer, key: key, expires: time.Now().UTC().AddDate(1, 0, 0).Truncate(time.Second)}
	root := metadata.Root(r.expires)
	root.Signed.ConsistentSnapshot = true
	for _, role := range []string{metadata.ROOT, metadata.TARGETS, metadata.SNAPSHOT, metadata.TIMESTAMP} {
		if err := root.Signed.AddKey(key, role); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := root.Sign(signer); err != nil {
		t.Fatal(err)
	}
	if r.Root, err = root.ToBytes(true); err != nil {
		t.Fatal(err)
	}
	r.Publish(t, target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.Requests++
		r.mu.Unlock()
		http.FileServer(http.Dir(r.dir)).ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Publish publishes target as the next version of targets, snapshot and
// timestamp.
func (r *Repo) Publish(t testing.TB, target []byte) {
	t.Helper()
	r.PublishExpiring(t, target, r.expires)
}

// PublishExpiring publishes target as the next version, the timestamp
// expiring at tsExpires (a time in the past publishes an expired one).
func (r *Repo) PublishExpiring(t testing.TB, target []byte, tsExpires time.Time) {
	t.Helper()
	r.version++
	v := r.version
	files := map[string][]byte{"1.root.json": r.Root}

	targets := metadata.Targets(r.expires)
	targets.Signed.Version = v
	ti, err := metadata.TargetFile().FromBytes(Target, target, "sha256")
	if err != nil {
		t.Fatal(err)
	}
	targets.Signed.Targets[Target] = ti
	tb := r.sign(t, targets)
	files[fmt.Sprintf("%d.targets.json", v)] = tb

	snapshot := metadata.Snapshot(r.expires)
	snapshot.Signed.Version = v
	snapshot.Signed.Meta["targets.json"] = metadata.MetaFile(v)
	sb := r.sign(t, snapshot)
	files[fmt.Sprintf("%d.snapshot.json", v)] = sb

	timestamp := metadata.Timestamp(tsExpires.UTC().Truncate(time.Second))
	timestamp.Signed.Version = v
	timestamp.Signed.Meta["snapshot.json"] = metadata.MetaFile(v)
	files["timestamp.json"] = r.sign(t, timestamp)

	h := sha256.Sum256(target)
	files["targets/"+hex.EncodeToString(h[:])+"."+Target] = target
	r.published = append(r.published, files)
	r.serve(t, files)
}

// sign signs md with the repository's key and returns its bytes.
func (r *Repo) sign(t testing.TB, md interface {
	Sign(signature.Signer) (*metadata.Signature, error)
	ToBytes(bool) ([]byte, error)
}) []byte {
	t.Helper()
	if _, err := md.Sign(r.signer); err != nil {
		t.Fatal(err)
	}
	b, err := md.ToBytes(true)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serve replaces the files served with files.
func (r *Repo) serve(t testing.TB, files map[string][]byte) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.RemoveAll(r.dir); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		p := filepath.Join(r.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Rollback serves version v (1 is the first) again, as a mirror replaying
// old metadata would.
func (r *Repo) Rollback(t testing.TB, v int) {
	t.Helper()
	r.serve(t, r.published[v-1])
}

// TamperTarget replaces the served bytes of the current target with data,
// the metadata unchanged: what a compromised mirror or a man in the middle
// would serve.
func (r *Repo) TamperTarget(t testing.TB, data []byte) {
	t.Helper()
	files := r.published[len(r.published)-1]
	out := map[string][]byte{}
	for name, b := range files {
		if filepath.Dir(name) == "targets" {
			b = data
		}
		out[name] = b
	}
	r.serve(t, out)
}

// WriteRoot writes the repository's root.json (version 1) to dir/name and
// returns its path: the --tuf-root file of a private instance.
func (r *Repo) WriteRoot(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, r.Root, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ServeRoot adds to what is served a root.json of version v, signed with
// the repository's key, as N.root.json: a new root claimed for a client
// that starts from another repository's root (version v-1).
func (r *Repo) ServeRoot(t testing.TB, v int64) {
	t.Helper()
	root := metadata.Root(r.expires)
	root.Signed.Version = v
	root.Signed.ConsistentSnapshot = true
	for _, role := range []string{metadata.ROOT, metadata.TARGETS, metadata.SNAPSHOT, metadata.TIMESTAMP} {
		if err := root.Signed.AddKey(r.key, role); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string][]byte{}
	for k, b := range r.published[len(r.published)-1] {
		files[k] = b
	}
	files[fmt.Sprintf("%d.root.json", v)] = r.sign(t, root)
	r.serve(t, files)
}
