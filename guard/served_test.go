package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/verify"
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
func pendingOf(t *testing.T, opts GateOptions) (string, string) {
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
	genuine := ResolveOrigin(ctx, Server{Command: []string{script(t, dir, "weather", "exec weather-server")}, Env: []string{}})
	other := ResolveOrigin(ctx, Server{Command: []string{script(t, dir, "weather-evil", "exec evil-server")}, Env: []string{}})
	if genuine.Served() == "" || other.Served() == "" || genuine.Served() == other.Served() {
		t.Fatalf("served: %q %q (%v %v)", genuine.Served(), other.Served(), genuine.Unresolved(), other.Unresolved())
	}
	opts.Origin = genuine
	path, _ := pendingOf(t, opts)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ReadListing(data)
	if err != nil || l.Served != genuine.Served() {
		t.Fatalf("the saved listing: %v, served %q", err, l.Served)
	}
	// The review: the saved listing, no live server.
	review := opts.Options
	review.Origin = nil
	r, err := Check(ctx, l, review)
	if err != nil || r.ExitCode() != verify.ExitApproval {
		t.Fatalf("review: %v %+v", err, r)
	}
	a, err := Approve(ctx, r, ApproveOptions{})
	if err != nil || a.ExitCode() != 0 || len(a.Approved) != 1 || a.Approved[0].Pin.Served != genuine.Served() {
		t.Fatalf("approve: %v %+v", err, a)
	}
	// The genuine program starts; another under the same definitions not.
	if fs, err := CheckPinnedOrigin(genuine, opts.Options); err != nil || len(fs) != 0 {
		t.Fatalf("the approved program: %v %+v", err, fs)
	}
	fs, err := CheckPinnedOrigin(other, opts.Options)
	if err != nil || len(fs) != 1 || fs[0].Kind != verify.RugPull || fs[0].Kind.ExitCode() != verify.ExitRugPull {
		t.Fatalf("another program serving the same definitions: %v %+v", err, fs)
	}
	// A launch that cannot be resolved any more is not the approved one.
	gone := ResolveOrigin(ctx, Server{Command: []string{filepath.Join(dir, "no-such-program")}, Env: []string{}})
	if gone.Unresolved() == nil {
		t.Fatalf("a missing program resolved: %q", gone.Served())
	}
	if fs, err := CheckPinnedOrigin(gone, opts.Options); err != nil || len(fs) != 1 || fs[0].Kind != verify.RugPull {
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
	opts.Origin = ResolveOrigin(ctx, Server{Command: []string{script(t, dir, "weather", "exec weather-server")}, Env: []string{}})
	other := ResolveOrigin(ctx, Server{Command: []string{script(t, dir, "weather-evil", "exec evil-server")}, Env: []string{}})
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
		if _, err := ReadListing(edited); !errors.Is(err, ErrServedBinding) {
			t.Errorf("%s edited: %v", name, err)
		}
	}
	// Malformed, each with the binding it would need.
	l, err := ReadListing(data)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"not an object": `"npm x@1"`,
		"no binding":    `{"by":"npm x@1"}`,
		"extra member":  `{"by":"npm x@1","binding":"` + servedBinding(l, "npm x@1") + `","trust":true}`,
		"empty":         `{"by":"","binding":"` + servedBinding(l, "") + `"}`,
		"too long":      `{"by":"` + strings.Repeat("x", maxServed+1) + `","binding":"` + servedBinding(l, strings.Repeat("x", maxServed+1)) + `"}`,
		// encoding/json matches member names without case: a person
		// reads one by, another would be recorded.
		"BY beside by": `{"by":"npm x@1","BY":"npm evil@1","binding":"` + servedBinding(l, "npm evil@1") + `"}`,
		"BY alone":     `{"BY":"npm x@1","binding":"` + servedBinding(l, "npm x@1") + `"}`,
		"Binding":      `{"by":"npm x@1","Binding":"` + servedBinding(l, "npm x@1") + `"}`,
		"null by":      `{"by":null,"binding":"` + servedBinding(l, "") + `"}`,
		"duplicate by": `{"by":"npm x@1","by":"npm evil@1","binding":"` + servedBinding(l, "npm evil@1") + `"}`,
	} {
		edited := bytes.Replace(data, []byte(`"served": {`), []byte(`"served": `+bad+`, "x": {`), 1)
		if _, err := ReadListing(edited); err == nil {
			t.Errorf("served %s: read", name)
		}
	}
	// The listing as saved reads back, with what served it.
	if l, err := ReadListing(data); err != nil || l.Served != opts.Origin.Served() {
		t.Fatalf("as saved: %v", err)
	}
}

// A listing without a server (a file written by hand or by an older
// etdi) still reads and approves, recording no served; the next check of
// the live server reports it and records it only when asked to.
func TestPinsWithoutServedUpgradedOnlyWhenAsked(t *testing.T) {
	ctx := context.Background()
	opts := gateOptions(t)
	dir := filepath.Dir(opts.Pins)
	approveServer(t, weatherServer("Get the weather."), opts.Options)
	genuine := ResolveOrigin(ctx, Server{Command: []string{script(t, dir, "weather", "exec weather-server")}, Env: []string{}})
	other := ResolveOrigin(ctx, Server{Command: []string{script(t, dir, "weather-evil", "exec evil-server")}, Env: []string{}})
	if un, err := UnservedPins(genuine, opts.Options); err != nil || len(un) != 1 {
		t.Fatalf("unserved pins before: %v %v", un, err)
	}
	live := func(o *Origin) *Report {
		t.Helper()
		conn := connInMemory(t, weatherServer("Get the weather."))
		defer conn.Close()
		l, err := List(ctx, SDKConn(conn), FetchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		check := opts.Options
		check.Origin = o
		r, err := Check(ctx, l, check)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Reported, nothing weakened and nothing changed without a yes.
	r := live(genuine)
	if r.ExitCode() != 0 || len(r.Unserved()) != 1 || r.Unserved()[0] != "get_weather" {
		t.Fatalf("check of the live server: exit %d, unserved %v", r.ExitCode(), r.Unserved())
	}
	if r := live(genuine); len(r.Unserved()) != 1 {
		t.Fatalf("recorded without being asked: %v", r.Unserved())
	}
	recorded, c, err := RecordServed(ctx, r)
	if err != nil || len(recorded) != 1 || recorded[0].Pin.Served != genuine.Served() || len(c.Unserved) != 0 {
		t.Fatalf("record served: %v %+v", err, recorded)
	}
	if r := live(genuine); r.ExitCode() != 0 || len(r.Unserved()) != 0 {
		t.Fatalf("after recording: exit %d, unserved %v", r.ExitCode(), r.Unserved())
	}
	if r := live(other); r.ExitCode() != verify.ExitRugPull {
		t.Fatalf("another program after recording: exit %d %+v", r.ExitCode(), r.Findings)
	}
	if un, err := UnservedPins(genuine, opts.Options); err != nil || len(un) != 0 {
		t.Fatalf("unserved pins after: %v %v", un, err)
	}
	// Nothing to record for a server of unknown origin, read-only pins,
	// or a server whose verification failed.
	if _, _, err := RecordServed(ctx, &Report{opts: opts.Options}); !errors.Is(err, ErrBlocked) {
		t.Fatalf("recorded for a blocked report: %v", err)
	}
	if _, _, err := RecordServed(ctx, live(nil)); err == nil {
		t.Fatal("recorded an unknown served")
	}
	ro := live(genuine)
	ro.opts.NoRecord = true
	if _, _, err := RecordServed(ctx, ro); err == nil {
		t.Fatal("recorded into read-only pins")
	}
}

// FuzzReadListingServed: a saved listing's served member is read under
// its binding or refused, never half: what ReadListing returns with a
// served writes back (Saver) to a file that reads back the same.
func FuzzReadListingServed(f *testing.F) {
	l := &Listing{Tools: nil, Live: true, Served: "file /usr/bin/weather sha256:" + strings.Repeat("ab", 32)}
	good, err := ReadListing([]byte(`{"tools":[{"name":"get_weather","description":"Get the weather."}],"instructions":"Use get_weather."}`))
	if err != nil {
		f.Fatal(err)
	}
	good.Served = l.Served
	write, err := good.Saver()
	if err != nil {
		f.Fatal(err)
	}
	var saved bytes.Buffer
	write(&saved)
	f.Add(saved.Bytes())
	f.Add(bytes.Replace(saved.Bytes(), []byte("weather sha256"), []byte("evil sha256"), 1))
	f.Add([]byte(`{"tools":[],"served":{"by":"npm x@1","binding":"sha256:00"}}`))
	f.Add([]byte(`{"tools":[],"served":{"by":"npm x@1","binding":"sha256:00","x":1}}`))
	f.Add([]byte(`{"tools":[],"served":"npm x@1"}`))
	f.Add([]byte(`{"result":{"tools":[]},"served":{"by":"npm x@1"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ReadListing(data)
		if err != nil || l.Served == "" {
			return
		}
		write, err := l.Saver()
		if err != nil {
			return // an entry that does not read back with its digest
		}
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		again, err := ReadListing(b.Bytes())
		if err != nil || again.Served != l.Served {
			t.Fatalf("served %q does not read back (%v):\n%s", l.Served, err, b.Bytes())
		}
	})
}

// A definition approved without what served it stays unserved when the
// server, configured another way, gets another definition approved
// beside it (a variant, docs/storage.md#approved-variants): etdi run still reports the pin,
// whose earlier definition any program serving it passes as before.
func TestUnservedVariantReported(t *testing.T) {
	ctx := context.Background()
	opts := gateOptions(t)
	dir := filepath.Dir(opts.Pins)
	approveServer(t, weatherServer("Get the weather."), opts.Options)
	genuine := ResolveOrigin(ctx, Server{Command: []string{script(t, dir, "weather", "exec weather-server")}, Env: []string{}})
	conn := connInMemory(t, weatherServer("Get the weather in Lima."))
	defer conn.Close()
	l, err := List(ctx, SDKConn(conn), FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check := opts.Options
	check.Origin = genuine
	r, err := Check(ctx, l, check)
	if err != nil {
		t.Fatal(err)
	}
	ap, err := Approve(ctx, r, ApproveOptions{Tools: []string{"get_weather"}})
	if err != nil || len(ap.Approved) != 1 || !ap.Approved[0].Variant || ap.Approved[0].Pin.Served != genuine.Served() {
		t.Fatalf("approve the variant: %v %+v", err, ap)
	}
	if un, err := UnservedPins(genuine, opts.Options); err != nil || len(un) != 1 {
		t.Fatalf("unserved pins with an unserved variant: %v %v", un, err)
	}
}
