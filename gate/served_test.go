package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/guard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// script writes an executable shell script: what a launch of it serves
// is the file, by its SHA-256.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// pendingOf runs a gate with origin in front of a server that offers a
// tool never approved, and returns the listing the gate saved for review
// and the review command it named.
func pendingOf(t *testing.T, opts Options) (string, string) {
	t.Helper()
	cs, _ := gatedClient(t, weatherServer("Get the weather."), opts)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_weather"})
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("a tool never approved was called: %v", err)
	}
	var data struct{ Review string }
	json.Unmarshal(we.Data, &data)
	cs.Close()
	saved, _ := filepath.Glob(filepath.Join(filepath.Dir(opts.Pins), "pending", "*.json"))
	if len(saved) != 1 || !strings.Contains(data.Review, "--tools "+saved[0]) {
		t.Fatalf("saved %v, review %q", saved, data.Review)
	}
	return saved[0], data.Review
}

// Approving through the gate's own review command (a saved listing)
// records what served the listing: another program serving the same
// definitions is refused before it starts and by the gate.
func TestAttackPendingApprovalRecordsServed(t *testing.T) {
	ctx := context.Background()
	opts := gateOptions(t)
	dir := filepath.Dir(opts.Pins)
	genuine := guard.ResolveOrigin(ctx, guard.Launch{Command: []string{script(t, dir, "weather", "exec weather-server")}, Env: []string{}})
	other := guard.ResolveOrigin(ctx, guard.Launch{Command: []string{script(t, dir, "weather-evil", "exec evil-server")}, Env: []string{}})
	if genuine.Served() == "" || other.Served() == "" || genuine.Served() == other.Served() {
		t.Fatalf("served: %q %q (%v %v)", genuine.Served(), other.Served(), genuine.Unresolved(), other.Unresolved())
	}
	opts.Origin = genuine
	path, _ := pendingOf(t, opts)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := guard.ReadListing(data)
	if err != nil || l.Served != genuine.Served() {
		t.Fatalf("the saved listing: %v, served %q", err, l.Served)
	}
	// The review: the saved listing, no live server.
	review := opts.Options
	review.Origin = nil
	r, err := guard.Check(ctx, l, review)
	if err != nil || r.ExitCode() != finding.ExitApproval {
		t.Fatalf("review: %v %+v", err, r)
	}
	a, err := guard.Approve(ctx, r, guard.ApproveOptions{})
	if err != nil || a.ExitCode() != 0 || len(a.Approved) != 1 || a.Approved[0].Pin.Served != genuine.Served() {
		t.Fatalf("approve: %v %+v", err, a)
	}
	// The genuine program starts; another under the same definitions not.
	if fs, err := guard.CheckPinnedOrigin(genuine, opts.Options); err != nil || len(fs) != 0 {
		t.Fatalf("the approved program: %v %+v", err, fs)
	}
	fs, err := guard.CheckPinnedOrigin(other, opts.Options)
	if err != nil || len(fs) != 1 || fs[0].Kind != finding.RugPull || fs[0].Kind.ExitCode() != finding.ExitRugPull {
		t.Fatalf("another program serving the same definitions: %v %+v", err, fs)
	}
	// A launch that cannot be resolved any more is not the approved one.
	gone := guard.ResolveOrigin(ctx, guard.Launch{Command: []string{filepath.Join(dir, "no-such-program")}, Env: []string{}})
	if gone.Unresolved() == nil {
		t.Fatalf("a missing program resolved: %q", gone.Served())
	}
	if fs, err := guard.CheckPinnedOrigin(gone, opts.Options); err != nil || len(fs) != 1 || fs[0].Kind != finding.RugPull {
		t.Fatalf("a launch no longer resolved: %v %+v", err, fs)
	}
	// And a gate that was handed it anyway withholds its tools.
	opts.Origin = other
	cs, _ := gatedClient(t, weatherServer("Get the weather."), opts)
	if lt, err := cs.ListTools(ctx, nil); err != nil || len(lt.Tools) != 0 {
		t.Fatalf("the swapped program's tools reached the host: %v %+v", err, lt)
	}
}

// A saved listing whose served was edited, or whose entries were, no
// longer matches its binding: it is refused, nothing in it approved.
func TestAttackPendingServedTampered(t *testing.T) {
	ctx := context.Background()
	opts := gateOptions(t)
	dir := filepath.Dir(opts.Pins)
	opts.Origin = guard.ResolveOrigin(ctx, guard.Launch{Command: []string{script(t, dir, "weather", "exec weather-server")}, Env: []string{}})
	other := guard.ResolveOrigin(ctx, guard.Launch{Command: []string{script(t, dir, "weather-evil", "exec evil-server")}, Env: []string{}})
	path, _ := pendingOf(t, opts)
	data, _ := os.ReadFile(path)
	served, _ := json.Marshal(opts.Origin.Served())
	if !bytes.Contains(data, served) {
		t.Fatalf("the saved listing does not say what served it:\n%s", data)
	}
	evil, _ := json.Marshal(other.Served())
	for name, edited := range map[string][]byte{
		"served":       bytes.Replace(data, served, evil, 1),
		"definition":   bytes.Replace(data, []byte("Get the weather."), []byte("Get the weather!"), 1),
		"binding":      bytes.Replace(data, []byte(`"binding":"sha256:`), []byte(`"binding":"sha256:0`), 1),
		"instructions": bytes.Replace(data, []byte("Use get_weather."), []byte("Use get_weather!"), 1),
	} {
		if bytes.Equal(edited, data) {
			t.Fatalf("%s: nothing edited", name)
		}
		if _, err := guard.ReadListing(edited); !errors.Is(err, guard.ErrServedBinding) {
			t.Errorf("%s edited: %v", name, err)
		}
	}
	// The listing as saved reads back, with what served it.
	if l, err := guard.ReadListing(data); err != nil || l.Served != opts.Origin.Served() {
		t.Fatalf("as saved: %v", err)
	}
}
