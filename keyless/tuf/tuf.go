// Package tuf fetches Sigstore trusted roots (trusted_root.json, SPEC.md
// §16.2) through The Update Framework with sigstore-go's TUF client
// (docs/signing.md#keyless-signers): the
// repository's metadata is verified from a TUF root (the public-good one
// sigstore-go embeds, or one given for a private instance) through
// timestamp, snapshot and targets, which refuses a tampered target,
// expired metadata and a rollback to older metadata, before the target is
// parsed as a trusted root.
package tuf

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/trust"
	sgtuf "github.com/sigstore/sigstore-go/pkg/tuf"
	"github.com/theupdateframework/go-tuf/v2/metadata"
)

// PublicGoodMirror is the TUF repository of Sigstore's public-good
// instance.
const PublicGoodMirror = sgtuf.DefaultMirror

// TargetName is the target a Sigstore TUF repository publishes its trusted
// root as.
const TargetName = "trusted_root.json"

// MaxDownload bounds every file fetched from a mirror.
const MaxDownload = 8 << 20

// MaxRootSize bounds a TUF root file given for a private instance.
const MaxRootSize = 512 << 10

// Options say which TUF repository to fetch from.
type Options struct {
	// Mirror is the repository's base URL; empty is PublicGoodMirror.
	Mirror string
	// Root is the TUF root (root.json) to start from; nil is the
	// public-good root that sigstore-go embeds. A private instance gives
	// both Mirror and Root.
	Root []byte
	// CacheDir keeps the verified metadata between updates (mode 0700,
	// files 0600), so that a later update refuses metadata older than
	// what was seen (a rollback). Required.
	CacheDir string
	// HTTPClient fetches the files; nil is a client with a one-minute
	// timeout.
	HTTPClient *http.Client
	// Now returns the fetch time recorded; nil is time.Now.
	Now func() time.Time
}

// Result is a verified trusted root and where it came from.
type Result struct {
	// Roots are the trusted roots of the target, parsed as the policy
	// keeps them.
	Roots []trust.SigstoreRoot
	// Target is the target's bytes as served (verified against the
	// targets metadata).
	Target []byte
	// Source records the mirror, the TUF root and the fetch time.
	Source trust.SigstoreRootSource
}

// CheckMirror validates a mirror URL: https (http only on a loopback
// address), with a host and no user information, query or fragment.
func CheckMirror(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || len(s) > 2048 {
		return fmt.Errorf("TUF mirror %q is not a URL with a host", termtext.Escape(s))
	}
	if !etdi.SecureURL(u) {
		return fmt.Errorf("TUF mirror %q: a TUF repository is fetched over https (http only on a loopback address)", termtext.Escape(s))
	}
	return nil
}

// Fetch updates the TUF metadata of the repository and returns its
// trusted root, verified. Any failure of TUF verification (a signature, a
// hash or length, an expiry, a version lower than one seen before) is an
// error naming the mirror; nothing is returned that TUF did not verify.
func Fetch(ctx context.Context, o Options) (*Result, error) {
	mirror := strings.TrimRight(o.Mirror, "/")
	if mirror == "" {
		mirror = PublicGoodMirror
	}
	if err := CheckMirror(mirror); err != nil {
		return nil, err
	}
	anchor := o.Root
	if anchor == nil {
		anchor = sgtuf.DefaultRoot()
	}
	if len(anchor) > MaxRootSize {
		return nil, fmt.Errorf("TUF root larger than %d bytes", MaxRootSize)
	}
	if o.CacheDir == "" {
		return nil, errors.New("no cache directory for the TUF metadata")
	}
	sum := sha256.Sum256(anchor)
	rootDigest := "sha256:" + hex.EncodeToString(sum[:])
	// One cache per mirror and TUF root: a private root never reads the
	// metadata another root verified.
	key := sha256.Sum256([]byte(mirror + "\n" + rootDigest))
	cache := filepath.Join(o.CacheDir, hex.EncodeToString(key[:12]))
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return nil, fmt.Errorf("TUF cache: %w", err)
	}
	if err := os.Chmod(o.CacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("TUF cache: %w", err)
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: time.Minute}
	}
	opts := sgtuf.DefaultOptions().
		WithRoot(anchor).
		WithRepositoryBaseURL(mirror).
		WithCachePath(cache).
		WithCacheValidity(sgtuf.NoCache).
		WithFetcher(&fetcher{ctx: ctx, client: hc, mirror: mirror}).
		WithContext(ctx)
	fail := func(what string, err error) error {
		return fmt.Errorf("TUF mirror %s: %s: %s", termtext.Escape(mirror), what, termtext.Escape(err.Error()))
	}
	client, err := sgtuf.New(opts)
	// The TUF client writes metadata 0644 in directories 0755: the cache
	// is the user's own.
	defer restrict(cache)
	if err != nil {
		return nil, fail("updating the TUF metadata", err)
	}
	target, err := client.GetTarget(TargetName)
	if err != nil {
		return nil, fail("fetching "+TargetName, err)
	}
	roots, err := trust.ParseSigstoreRoots(target)
	if err != nil {
		return nil, fail(TargetName, err)
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	return &Result{Roots: roots, Target: target, Source: trust.SigstoreRootSource{
		Mirror: mirror, TUFRoot: rootDigest, Fetched: now().UTC().Truncate(time.Second)}}, nil
}

// restrict makes the cache's directories 0700 and its files 0600.
func restrict(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			_ = os.Chmod(p, 0o700)
		} else if d.Type().IsRegular() {
			_ = os.Chmod(p, 0o600)
		}
		return nil
	})
}

// fetcher downloads the repository's files, bounded, over the URL scheme
// the mirror was checked for, following redirects only to https (or, from
// a loopback http mirror, to http on a loopback address).
type fetcher struct {
	ctx    context.Context
	client *http.Client
	mirror string
}

func (f *fetcher) DownloadFile(rawURL string, maxLength int64, _ time.Duration) ([]byte, error) {
	if maxLength <= 0 || maxLength > MaxDownload {
		maxLength = MaxDownload
	}
	if !strings.HasPrefix(rawURL, f.mirror+"/") {
		return nil, fmt.Errorf("%s is not below the mirror", rawURL)
	}
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	c := *f.client
	https := strings.HasPrefix(f.mirror, "https:")
	c.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		// An https mirror's files come over https: a redirect to plain
		// http, even on a loopback address, would have etdi send requests
		// to this machine's own services.
		if !etdi.SecureURL(r.URL) || (https && r.URL.Scheme != "https") || len(via) > 5 {
			return fmt.Errorf("redirect to %s refused", r.URL.Redacted())
		}
		return nil
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &metadata.ErrDownloadHTTP{StatusCode: resp.StatusCode, URL: rawURL}
	}
	data, err := readBounded(resp, maxLength)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rawURL, err)
	}
	return data, nil
}

// readBounded reads a response body of at most max bytes.
func readBounded(resp *http.Response, max int64) ([]byte, error) {
	if resp.ContentLength > max {
		return nil, &metadata.ErrDownloadLengthMismatch{Msg: fmt.Sprintf("length %d is larger than %d", resp.ContentLength, max)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &metadata.ErrDownloadLengthMismatch{Msg: fmt.Sprintf("larger than %d bytes", max)}
	}
	return data, nil
}
