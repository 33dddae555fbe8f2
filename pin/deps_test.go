package pin_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// verifierDeps are the packages and modules a pin store has no use for:
// the verifier and what it links (Sigstore, Rekor, TUF, the OpenAPI
// runtime of Rekor's client) and etcd's server. The pin store names
// findings with package finding, never with package verify. etcd's client
// (and so gRPC, which it speaks) is linked: [pin.OpenEtcd] needs it.
var verifierDeps = []string{
	"github.com/etdi-dev/etdi/verify",
	"github.com/etdi-dev/etdi/keyless",
	"github.com/etdi-dev/etdi/trust",
	"github.com/etdi-dev/etdi/keys",
	"github.com/sigstore/",
	"github.com/theupdateframework/",
	"github.com/go-openapi/",
	"go.etcd.io/etcd/server/",
}

// TestPinLinksNoVerifier fails when package pin depends, directly or
// through another package, on the verifier or on what it links. A program
// that keeps pins (a gate, an approval tool) then does not carry Sigstore.
func TestPinLinksNoVerifier(t *testing.T) {
	checkNoVerifierDeps(t, "github.com/etdi-dev/etdi/pin")
}

// checkNoVerifierDeps lists the dependencies of pkg with go list for each
// operating system etdi ships for and reports every one of verifierDeps.
func checkNoVerifierDeps(t *testing.T, pkg string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		cmd := exec.Command("go", "list", "-e", "-deps", "-f", "{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}", pkg)
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOFLAGS=-mod=readonly")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GOOS=%s go list: %v", goos, err)
		}
		n := 0
		for line := range strings.Lines(string(out)) {
			p, mod, _ := strings.Cut(strings.TrimSpace(line), " ")
			n++
			for _, bad := range verifierDeps {
				if isUnder(p, bad) || isUnder(mod, bad) {
					t.Errorf("GOOS=%s: %s depends on %s (module %s)", goos, pkg, p, mod)
				}
			}
		}
		if n < 10 {
			t.Fatalf("GOOS=%s: go list listed %d packages for %s: the listing is broken", goos, n, pkg)
		}
	}
}

// isUnder reports whether path is prefix: a package path, or one under a
// prefix ending in "/".
func isUnder(path, prefix string) bool {
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(path, prefix)
	}
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}
