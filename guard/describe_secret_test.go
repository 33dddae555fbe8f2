package guard

import (
	"net/http"
	"strings"
	"testing"
)

// A name derived from what the server runs or where it answers is never
// one of its secrets: a package named as an argument's value, or a URL
// path holding a header's value, gives the program's name or none.
func TestDescribeNameNeverASecret(t *testing.T) {
	if s := Describe([]string{"npx", "-y", "acme-tenant-weather", "TENANT=acme-tenant-weather"}, "", nil, "", nil, false); s.Name != "npx" {
		t.Errorf("a package named like a secret argument pinned under %q", s.Name)
	}
	h := http.Header{"X-Tenant": {"acme-tenant-7731"}}
	if s := Describe(nil, "https://mcp.example/acme-tenant-7731/mcp", h, "", nil, false); s.Name != "" {
		t.Errorf("a URL path holding a header's value pinned under %q", s.Name)
	}
}

// The moving_target message is masked with the description's secrets.
func TestMovingTargetMasked(t *testing.T) {
	s := Describe([]string{"npx", "-y", "acme-private-weather"}, "", nil, "", nil, false)
	s.Secrets.Add("acme-private-weather")
	fs := s.MovingTarget("unsigned:npx")
	if len(fs) != 1 || strings.Contains(fs[0].Message, "acme-private-weather") {
		t.Errorf("moving target: %+v", fs)
	}
	if fs := (*ServerSpec)(nil).MovingTarget("x"); fs != nil {
		t.Errorf("no description: %+v", fs)
	}
}
