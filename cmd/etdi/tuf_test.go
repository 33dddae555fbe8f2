package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/internal/tuftest"
	"github.com/etdi-dev/etdi/trust"
)

// 'trust sigstore-root --update' with a private instance's mirror and TUF
// root: creates the policy, keeps the verified trusted root with its
// source, caches the TUF metadata in etdi's cache directory (0700), and a
// keyless signer can then be trusted. A tampered target fails with exit 1,
// the mirror named and the policy unchanged; a trusted root given as a
// file drops the TUF source. The public-good root does not verify the
// loopback repository, and --tuf-root without --tuf-mirror is a usage
// error.
func TestTrustSigstoreRootUpdate(t *testing.T) {
	dir := t.TempDir()
	in := sigstoretest.New(t)
	repo := tuftest.New(t, in.TrustedRoot(t))
	rootFile := repo.WriteRoot(t, dir, "tuf-root.json")
	r := runEtdi(t, dir, nil, "trust", "sigstore-root", "--update", "--tuf-mirror", repo.URL, "--tuf-root", rootFile)
	if r.code != 0 || !strings.Contains(r.stdout, "kept 1 Sigstore trusted root(s) from TUF mirror "+repo.URL) {
		t.Fatalf("update: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	p, err := trust.Load(filepath.Join(dir, ".config", "etdi", "trust.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SigstoreRoots) != 1 || p.SigstoreRootSource == nil || p.SigstoreRootSource.Mirror != repo.URL {
		t.Fatalf("policy: %d roots, source %+v", len(p.SigstoreRoots), p.SigstoreRootSource)
	}
	cache := filepath.Join(dir, ".cache", "etdi", "tuf")
	if fi, err := os.Stat(cache); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700) {
		t.Fatalf("cache %s: %v %v", cache, fi, err)
	}
	r = runEtdi(t, dir, nil, "trust", "list", "--json")
	var l struct {
		Source *struct{ TufMirror, TufRoot, Fetched string } `json:"sigstoreTrustedRootSource"`
	}
	if json.Unmarshal([]byte(r.stdout), &l) != nil || l.Source == nil || l.Source.TufMirror != repo.URL || !strings.HasPrefix(l.Source.TufRoot, "sha256:") {
		t.Fatalf("trust list: %s", r.stdout)
	}
	r = runEtdi(t, dir, nil, "trust", "add", "--provider", "acme", "--sigstore-issuer", sigstoretest.GitHubIssuer,
		"--sigstore-identity-regexp", `https://github\.com/acme/weather/\.github/workflows/release\.yml@refs/tags/v.*`)
	if r.code != 0 {
		t.Fatalf("trust add after update: %d %s", r.code, r.stderr)
	}
	// Again: unchanged.
	r = runEtdi(t, dir, nil, "trust", "sigstore-root", "--update", "--tuf-mirror", repo.URL, "--tuf-root", rootFile)
	if r.code != 0 || !strings.Contains(r.stdout, "unchanged") {
		t.Fatalf("second update: %d %s%s", r.code, r.stdout, r.stderr)
	}

	before, _ := os.ReadFile(filepath.Join(dir, ".config", "etdi", "trust.json"))
	repo.Publish(t, sigstoretest.New(t).TrustedRoot(t))
	repo.TamperTarget(t, sigstoretest.New(t).TrustedRoot(t))
	r = runEtdi(t, dir, nil, "trust", "sigstore-root", "--update", "--tuf-mirror", repo.URL, "--tuf-root", rootFile)
	if r.code != 1 || !strings.Contains(r.stderr, "TUF mirror "+repo.URL) || !strings.Contains(r.stderr, "etdi trust sigstore-root --update --tuf-mirror") {
		t.Fatalf("tampered target: %d %s", r.code, r.stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, ".config", "etdi", "trust.json")); string(after) != string(before) {
		t.Fatal("a refused update changed the policy")
	}

	r = runEtdi(t, dir, nil, "trust", "sigstore-root", "--update", "--tuf-mirror", repo.URL)
	if r.code != 1 {
		t.Fatalf("public-good root against a test repository: %d %s", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"--update", "--tuf-root", rootFile},
		{"--update", "--tuf-mirror", "http://tuf.example", "--tuf-root", rootFile},
		{"--update", "trusted_root.json"},
		{"--tuf-mirror", repo.URL, "trusted_root.json"},
		{},
	} {
		if r := runEtdi(t, dir, nil, append([]string{"trust", "sigstore-root"}, args...)...); r.code != 2 {
			t.Errorf("%q: exit %d %s", args, r.code, r.stderr)
		}
	}

	os.WriteFile(filepath.Join(dir, "trusted_root.json"), in.TrustedRoot(t), 0o644)
	if r := runEtdi(t, dir, nil, "trust", "sigstore-root", "trusted_root.json"); r.code != 0 {
		t.Fatalf("from a file: %d %s", r.code, r.stderr)
	}
	if p, _ := trust.Load(filepath.Join(dir, ".config", "etdi", "trust.json")); p == nil || p.SigstoreRootSource != nil {
		t.Fatal("a root given by hand kept the TUF source")
	}
}
