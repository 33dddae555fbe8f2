package lockfile

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/pin"
)

// The scopes an approver gave unsigned tools travel with the lockfile:
// exported, parsed and imported as they were given, so that the rules
// that read them (a forbid of files:write) hold on every machine that
// imports the lockfile; a database whose pin has other scopes than the
// lockfile's is a conflict, and --replace gives the lockfile's.
func TestLockfileKeepsScopes(t *testing.T) {
	a := openStore(t)
	files := observations(t, "Get the weather.")[1]
	if _, _, err := a.Approve(files, pin.ApproveOptions{By: "alice", AcceptInstructions: true,
		Scopes: map[string][]string{"read_file": {"files:read", "files:write"}}}); err != nil {
		t.Fatal(err)
	}
	data := export(t, a)
	if !strings.Contains(string(data), `"files:write"`) {
		t.Fatalf("the lockfile lost the scopes:\n%s", data)
	}
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	b := openStore(t)
	if _, err := Import(b, f, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := b.Get("unsigned:files", "read_file")
	if err != nil || p == nil || !slices.Equal(p.Scopes, []string{"files:read", "files:write"}) {
		t.Fatalf("imported pin: %+v %v", p, err)
	}
	if l, _ := b.Get("unsigned:files", "list_dir"); l == nil || len(l.Scopes) != 0 {
		t.Fatalf("list_dir: %+v", l)
	}
	// Another database gave read_file other scopes.
	c := openStore(t)
	if _, _, err := c.Approve(files, pin.ApproveOptions{By: "carol", AcceptInstructions: true,
		Scopes: map[string][]string{"read_file": {"files:read"}}}); err != nil {
		t.Fatal(err)
	}
	var ce *ConflictError
	if _, err := Import(c, f, ImportOptions{}); !errors.As(err, &ce) || !strings.Contains(err.Error(), "files:write") {
		t.Fatalf("import over other scopes: %v", err)
	}
	if _, err := Import(c, f, ImportOptions{Replace: true}); err != nil {
		t.Fatal(err)
	}
	if p, _ := c.Get("unsigned:files", "read_file"); p == nil || !slices.Equal(p.Scopes, []string{"files:read", "files:write"}) {
		t.Fatalf("replaced pin: %+v", p)
	}
	for _, s := range []*pin.Store{b, c} {
		if _, dis, err := s.Audit(); err != nil || len(dis) > 0 {
			t.Fatalf("audit: %v %v", dis, err)
		}
	}
	// Only an unsigned tool has scopes given at approval.
	bad := strings.Replace(string(export(t, openStoreWith(t, observations(t, "x")[0]))), `"permissions": [`, `"scopes": ["files:write"], "permissions": [`, 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "scopes") {
		t.Fatalf("scopes on a signed tool: %v", err)
	}
}

func openStoreWith(t *testing.T, o *pin.Observation) *pin.Store {
	s := openStore(t)
	approveAll(t, s, o, "alice")
	return s
}
