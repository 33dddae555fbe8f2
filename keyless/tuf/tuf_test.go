package tuf

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/internal/tuftest"
	"github.com/etdi-dev/etdi/trust"
	sgtuf "github.com/sigstore/sigstore-go/pkg/tuf"
)

func fetch(t *testing.T, repo *tuftest.Repo, cache string) (*Result, error) {
	t.Helper()
	return Fetch(context.Background(), Options{Mirror: repo.URL, Root: repo.Root, CacheDir: cache})
}

// A private instance's repository: the trusted root it publishes is
// fetched, verified and parsed; the source names the mirror, the digest of
// the TUF root started from and the fetch time; the cache is the user's
// own (0700 directories, 0600 files). A new trusted root published later
// is fetched by the next update.
func TestFetchVerifiedRoot(t *testing.T) {
	target := sigstoretest.New(t).TrustedRoot(t)
	repo := tuftest.New(t, target)
	cache := filepath.Join(t.TempDir(), "tuf")
	before := time.Now().UTC().Add(-time.Second)
	res, err := fetch(t, repo, cache)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Target, target) || len(res.Roots) != 1 {
		t.Fatalf("target %d bytes, %d roots", len(res.Target), len(res.Roots))
	}
	sum := sha256.Sum256(repo.Root)
	if res.Source.Mirror != repo.URL || res.Source.TUFRoot != "sha256:"+hex.EncodeToString(sum[:]) || res.Source.Fetched.Before(before.Truncate(time.Second)) {
		t.Fatalf("source %+v", res.Source)
	}
	if err := trust.CheckSigstoreRootSource(res.Source); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		n := 0
		filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
			fi, _ := d.Info()
			want := os.FileMode(0o600)
			if d.IsDir() {
				want = 0o700
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
			}
			n++
			return nil
		})
		if n < 4 {
			t.Errorf("the cache holds %d entries", n)
		}
	}

	next := sigstoretest.New(t).TrustedRoot(t)
	repo.Publish(t, next)
	res, err = fetch(t, repo, cache)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Target, next) {
		t.Fatal("the update did not fetch the new trusted root")
	}
}

// A mirror serving a target other than the one the signed targets
// metadata describes (a compromised mirror, a man in the middle) is
// refused, and nothing is returned.
func TestFetchRefusesTamperedTarget(t *testing.T) {
	repo := tuftest.New(t, sigstoretest.New(t).TrustedRoot(t))
	evil := sigstoretest.New(t).TrustedRoot(t)
	repo.TamperTarget(t, evil)
	res, err := fetch(t, repo, t.TempDir())
	if err == nil || res != nil {
		t.Fatalf("tampered target accepted: %v", res)
	}
	if !strings.Contains(err.Error(), repo.URL) || !strings.Contains(err.Error(), "trusted_root.json") {
		t.Errorf("error does not name the mirror and the target: %v", err)
	}
	// Same length, one byte flipped.
	repo = tuftest.New(t, sigstoretest.New(t).TrustedRoot(t))
	flipped := bytes.Clone(evil)
	flipped[len(flipped)/2] ^= 1
	repo.TamperTarget(t, flipped)
	if _, err := fetch(t, repo, t.TempDir()); err == nil {
		t.Fatal("flipped target accepted")
	}
}

// An expired timestamp (a mirror replaying metadata after it stopped
// being refreshed, a freeze attack) is refused.
func TestFetchRefusesExpiredTimestamp(t *testing.T) {
	repo := tuftest.New(t, sigstoretest.New(t).TrustedRoot(t))
	repo.PublishExpiring(t, sigstoretest.New(t).TrustedRoot(t), time.Now().Add(-time.Hour))
	_, err := fetch(t, repo, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "expired") || !strings.Contains(err.Error(), repo.URL) {
		t.Fatalf("expired timestamp: %v", err)
	}
}

// After an update has seen version 2, a mirror serving version 1 again (a
// rollback to a trusted root Sigstore has since replaced) is refused: the
// cache remembers what was seen.
func TestFetchRefusesRollback(t *testing.T) {
	old := sigstoretest.New(t).TrustedRoot(t)
	repo := tuftest.New(t, old)
	repo.Publish(t, sigstoretest.New(t).TrustedRoot(t))
	cache := t.TempDir()
	if _, err := fetch(t, repo, cache); err != nil {
		t.Fatal(err)
	}
	repo.Rollback(t, 1)
	res, err := fetch(t, repo, cache)
	if err == nil {
		t.Fatalf("rollback accepted (target is the old one: %v)", bytes.Equal(res.Target, old))
	}
	if !strings.Contains(err.Error(), "version") {
		t.Errorf("error: %v", err)
	}
	// A fresh cache has not seen version 2 and takes version 1: the
	// cache is what catches the rollback.
	if _, err := fetch(t, repo, t.TempDir()); err != nil {
		t.Fatalf("version 1 on a fresh cache: %v", err)
	}
}

// A repository signed by keys that the TUF root does not name is refused:
// the public-good root sigstore-go embeds does not trust a test
// repository, and one private root does not trust another's repository.
func TestFetchRefusesRepositoryOfAnotherRoot(t *testing.T) {
	repo := tuftest.New(t, sigstoretest.New(t).TrustedRoot(t))
	// The next version of the public-good root, claimed by the test
	// repository: not signed by the public-good root's keys.
	var embedded struct {
		Signed struct {
			Version int64 `json:"version"`
		} `json:"signed"`
	}
	if err := json.Unmarshal(sgtuf.DefaultRoot(), &embedded); err != nil || embedded.Signed.Version < 1 {
		t.Fatalf("embedded root: %v", err)
	}
	repo.ServeRoot(t, embedded.Signed.Version+1)
	res, err := Fetch(context.Background(), Options{Mirror: repo.URL, CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "root") || !strings.Contains(err.Error(), "signature") {
		t.Fatalf("the public-good root and a test repository: %v, %+v", err, res)
	}
	other := tuftest.New(t, sigstoretest.New(t).TrustedRoot(t))
	if _, err := Fetch(context.Background(), Options{Mirror: repo.URL, Root: other.Root, CacheDir: t.TempDir()}); err == nil {
		t.Fatal("another repository's root accepted")
	}
}

// A target that TUF verifies but that is not a usable trusted root (no
// certificate authority, not JSON) is refused.
func TestFetchRefusesTargetThatIsNoTrustedRoot(t *testing.T) {
	for _, target := range []string{`{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`, "not json", "[]"} {
		repo := tuftest.New(t, []byte(target))
		if _, err := fetch(t, repo, t.TempDir()); err == nil {
			t.Errorf("target %q accepted", target)
		}
	}
}

// An unreachable mirror is an error that names its URL.
func TestFetchUnreachableMirror(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	repo := tuftest.New(t, sigstoretest.New(t).TrustedRoot(t))
	_, err = Fetch(context.Background(), Options{Mirror: url, Root: repo.Root, CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "TUF mirror "+url) {
		t.Fatalf("unreachable mirror: %v", err)
	}
}

// Mirrors are https, or http on a loopback address; no user information,
// query or fragment.
func TestCheckMirror(t *testing.T) {
	for _, ok := range []string{"https://tuf-repo-cdn.sigstore.dev", "http://127.0.0.1:8080", "https://tuf.example/prod"} {
		if err := CheckMirror(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "tuf.example", "http://tuf.example", "https://u:p@tuf.example", "https://tuf.example/?x=1", "https://tuf.example/#f", "file:///etc", "ftp://tuf.example"} {
		if err := CheckMirror(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := Fetch(context.Background(), Options{Mirror: "http://tuf.example", CacheDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "fetched over https") {
		t.Errorf("plain http mirror: %v", err)
	}
	if _, err := Fetch(context.Background(), Options{Mirror: "http://127.0.0.1:1"}); err == nil || !strings.Contains(err.Error(), "cache") {
		t.Errorf("no cache directory: %v", err)
	}
}

// Files larger than MaxDownload are refused however large the metadata
// says they are.
func TestFetcherBoundsDownloads(t *testing.T) {
	big := bytes.Repeat([]byte(" "), MaxDownload+10)
	repo := tuftest.New(t, big)
	_, err := fetch(t, repo, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversized target: %v", err)
	}
}

// recorder answers the repository's timestamp with a redirect to plain
// http elsewhere and records every request it is asked to send.
type recorder struct {
	hosts []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.hosts = append(r.hosts, req.URL.Host)
	if strings.HasSuffix(req.URL.Path, "/timestamp.json") {
		return &http.Response{StatusCode: http.StatusFound, Header: http.Header{"Location": {"http://tuf.example/timestamp.json"}},
			Body: http.NoBody, Request: req}, nil
	}
	return http.DefaultTransport.RoundTrip(req)
}

// A mirror redirecting to plain http on another host is not followed.
func TestFetchRefusesInsecureRedirect(t *testing.T) {
	repo := tuftest.New(t, sigstoretest.New(t).TrustedRoot(t))
	rec := &recorder{}
	_, err := Fetch(context.Background(), Options{Mirror: repo.URL, Root: repo.Root, CacheDir: t.TempDir(), HTTPClient: &http.Client{Transport: rec}})
	if err == nil || !strings.Contains(err.Error(), "redirect to http://tuf.example/timestamp.json refused") {
		t.Fatalf("insecure redirect: %v", err)
	}
	for _, h := range rec.hosts {
		if h == "tuf.example" {
			t.Fatal("the redirect was followed")
		}
	}
}

// A TUF root larger than MaxRootSize is refused before anything is
// fetched.
func TestFetchRefusesHugeRoot(t *testing.T) {
	repo := tuftest.New(t, sigstoretest.New(t).TrustedRoot(t))
	before := repo.Requests
	_, err := Fetch(context.Background(), Options{Mirror: repo.URL, Root: bytes.Repeat([]byte(" "), MaxRootSize+1), CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "TUF root larger") || repo.Requests != before {
		t.Fatalf("huge root: %v (requests %d)", err, repo.Requests-before)
	}
}

// unsized serves the timestamp with no length announced, larger than any
// timestamp may be.
type unsized struct{}

func (unsized) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/timestamp.json") {
		return &http.Response{StatusCode: http.StatusOK, ContentLength: -1, Header: http.Header{},
			Body: io.NopCloser(bytes.NewReader(bytes.Repeat([]byte(" "), 1<<20))), Request: req}, nil
	}
	return http.DefaultTransport.RoundTrip(req)
}

// A file larger than its bound is refused while it is read, when the
// mirror announces no length.
func TestFetchBoundsUnsizedResponses(t *testing.T) {
	repo := tuftest.New(t, sigstoretest.New(t).TrustedRoot(t))
	_, err := Fetch(context.Background(), Options{Mirror: repo.URL, Root: repo.Root, CacheDir: t.TempDir(), HTTPClient: &http.Client{Transport: unsized{}}})
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("unsized timestamp: %v", err)
	}
}

// downgrader serves the repository at https://tuf.test (through repo's
// plain-http server) and answers its timestamp with a redirect to plain
// http on a loopback address; it records every URL it is asked for.
type downgrader struct {
	repo string
	urls []string
}

func (d *downgrader) RoundTrip(req *http.Request) (*http.Response, error) {
	d.urls = append(d.urls, req.URL.String())
	if req.URL.Scheme != "https" {
		return nil, io.ErrUnexpectedEOF // never served
	}
	if strings.HasSuffix(req.URL.Path, "/timestamp.json") {
		return &http.Response{StatusCode: http.StatusFound, Header: http.Header{"Location": {"http://127.0.0.1:2379/v3/kv/range"}},
			Body: http.NoBody, Request: req}, nil
	}
	out := req.Clone(req.Context())
	out.URL, _ = out.URL.Parse(d.repo + req.URL.Path)
	out.Host = ""
	return http.DefaultTransport.RoundTrip(out)
}

// An https mirror redirecting to plain http is not followed, on a
// loopback address either: the files of an https mirror come over https,
// and a mirror cannot make etdi send requests to this machine's own
// services.
func TestFetchRefusesRedirectToLoopbackHTTP(t *testing.T) {
	repo := tuftest.New(t, sigstoretest.New(t).TrustedRoot(t))
	d := &downgrader{repo: repo.URL}
	_, err := Fetch(context.Background(), Options{Mirror: "https://tuf.test", Root: repo.Root, CacheDir: t.TempDir(), HTTPClient: &http.Client{Transport: d}})
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("redirect to loopback http: %v", err)
	}
	for _, u := range d.urls {
		if strings.HasPrefix(u, "http://") {
			t.Fatalf("the redirect was followed: %v", d.urls)
		}
	}
}
