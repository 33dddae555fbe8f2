package gate

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/pin"
)

// An approval shared by one artifact under another configuration name
// (docs/storage.md#one-artifact-under-several-configuration-names) holds for the whole session: a change of the pin
// database by another process that concerns neither server (here a
// revocation of a third server's tool) makes the gate ask the database
// again, and the shared tool is still approved there, as the listing
// found it. Asked without what serves the server, the database would
// find the tool new and the gate would withdraw it.
func TestSharedApprovalSurvivesRejudge(t *testing.T) {
	ctx := context.Background()
	opts := atkOptions(t) // approves server atk, a third server
	dir := filepath.Dir(opts.Pins)
	opts.Origin = guard.ResolveOrigin(ctx, guard.Launch{Command: []string{script(t, dir, "clock-server", "exec clock")}, Env: []string{}})
	if _, ok := pin.ArtifactIdentity(opts.Origin.Served()); !ok {
		t.Fatalf("served %q (%v)", opts.Origin.Served(), opts.Origin.Unresolved())
	}
	// The same program approved under the name time.
	timeOpts := opts.Options
	timeOpts.Name = "time"
	a, b := pipePair()
	serveAtk(b, cleanHandler)
	l, err := guard.List(ctx, a, guard.FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	r, err := guard.Check(ctx, l, timeOpts)
	if err != nil {
		t.Fatal(err)
	}
	if ap, err := guard.Approve(ctx, r, guard.ApproveOptions{AcceptInstructions: true}); err != nil || ap.ExitCode() != 0 {
		t.Fatalf("approve: %v %+v", err, ap)
	}
	// Run under the name clock: shared, nothing to approve.
	opts.Name = "clock"
	g := startAtk(t, opts, cleanHandler)
	g.init(t)
	if ans := g.ask(t, "tools/list", `{}`, 5*time.Second); !strings.Contains(ans, "get_weather") {
		t.Fatalf("the shared tool was not listed: %s", ans)
	}
	if ans := g.ask(t, "tools/call", `{"name":"get_weather","arguments":{}}`, 5*time.Second); !strings.Contains(ans, "sunny") {
		t.Fatalf("call of the shared tool: %s", ans)
	}
	if err := opts.Options.WithPins(false, func(s *pin.Store) error {
		return s.Revoke(pin.Revocation{Server: "unsigned:atk", Tool: "get_weather", By: "tester", Reason: "another server"})
	}); err != nil {
		t.Fatal(err)
	}
	if ans := g.ask(t, "tools/call", `{"name":"get_weather","arguments":{}}`, 5*time.Second); !strings.Contains(ans, "sunny") {
		t.Fatalf("call of the shared tool after an unrelated change: %s", ans)
	}
	// Revoking it under the name it was approved under withdraws it.
	if err := opts.Options.WithPins(false, func(s *pin.Store) error {
		return s.Revoke(pin.Revocation{Server: "unsigned:time", Tool: "get_weather", By: "tester", Reason: "compromised"})
	}); err != nil {
		t.Fatal(err)
	}
	if ans := g.ask(t, "tools/call", `{"name":"get_weather","arguments":{}}`, 5*time.Second); !strings.Contains(ans, "-32090") {
		t.Fatalf("call of a tool whose shared approval was revoked: %s", ans)
	}
}
