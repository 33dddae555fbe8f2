package policy

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPolicyLinksNoVerifier fails when package policy depends, directly
// or through [pin], on the verifier or on what it links (Sigstore, Rekor,
// TUF, the OpenAPI runtime): a gate that authorizes calls does not carry
// them.
func TestPolicyLinksNoVerifier(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	bad := []string{"github.com/etdi-dev/etdi/verify", "github.com/etdi-dev/etdi/keyless", "github.com/etdi-dev/etdi/trust",
		"github.com/sigstore/", "github.com/theupdateframework/", "github.com/go-openapi/", "go.etcd.io/etcd/server/"}
	cmd := exec.Command("go", "list", "-e", "-deps", "-f", "{{.ImportPath}}", "github.com/etdi-dev/etdi/policy")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if !strings.Contains(string(out), "github.com/cedar-policy/cedar-go\n") {
		t.Fatalf("go list does not list cedar-go among policy's dependencies: the listing is broken:\n%s", out)
	}
	for line := range strings.Lines(string(out)) {
		p := strings.TrimSpace(line)
		for _, b := range bad {
			if p == b || strings.HasPrefix(p, strings.TrimSuffix(b, "/")+"/") {
				t.Errorf("policy depends on %s", p)
			}
		}
	}
}
