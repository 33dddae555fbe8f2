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

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/trust"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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

// weatherServer is a go-sdk server of one tool, get_weather.
func weatherServer(description string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "go-weather", Version: "1.0.0"}, &mcp.ServerOptions{Instructions: "Use get_weather."})
	s.AddTool(&mcp.Tool{Name: "get_weather", Description: description,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny"}}}, nil
		})
	return s
}

// weatherOptions are those of an unsigned server "weather" pinned by digest.
func weatherOptions(t *testing.T) Options {
	return Options{Policy: &trust.Policy{Unsigned: trust.Warn}, Pins: filepath.Join(t.TempDir(), "pins.db"), Name: "weather", By: "tester"}
}

// connInMemory connects server to an in-memory transport and returns the
// client's end, connected (the server's session ends with the test).
func connInMemory(t *testing.T, server *mcp.Server) mcp.Connection {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	conn, err := ct.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// approveServer lists server over an in-memory connection and approves
// everything it offers.
func approveServer(t *testing.T, server *mcp.Server, opts Options) {
	t.Helper()
	ctx := context.Background()
	conn := connInMemory(t, server)
	defer conn.Close()
	l, err := List(ctx, SDKConn(conn), FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(ctx, l, opts)
	if err != nil || r.ExitCode() != 13 {
		t.Fatalf("first check: %v exit %d %+v", err, r.ExitCode(), r.Findings)
	}
	a, err := Approve(ctx, r, ApproveOptions{})
	if err != nil || a.ExitCode() != 0 || len(a.Approved) != 1 {
		t.Fatalf("approve: %v %+v", err, a)
	}
}

// A listing without a server (a file written by hand or by an older
// etdi) still reads and approves, recording no served; the next check of
// the live server reports it and records it only when asked to.
func TestPinsWithoutServedUpgradedOnlyWhenAsked(t *testing.T) {
	ctx := context.Background()
	opts := weatherOptions(t)
	dir := filepath.Dir(opts.Pins)
	approveServer(t, weatherServer("Get the weather."), opts)
	genuine := ResolveOrigin(ctx, Launch{Command: []string{script(t, dir, "weather", "exec weather-server")}, Env: []string{}})
	other := ResolveOrigin(ctx, Launch{Command: []string{script(t, dir, "weather-evil", "exec evil-server")}, Env: []string{}})
	if un, err := UnservedPins(genuine, opts); err != nil || len(un) != 1 {
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
		check := opts
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
	if r := live(other); r.ExitCode() != finding.ExitRugPull {
		t.Fatalf("another program after recording: exit %d %+v", r.ExitCode(), r.Findings)
	}
	if un, err := UnservedPins(genuine, opts); err != nil || len(un) != 0 {
		t.Fatalf("unserved pins after: %v %v", un, err)
	}
	// Nothing to record for a server of unknown origin, read-only pins,
	// or a server whose verification failed.
	if _, _, err := RecordServed(ctx, &Report{opts: opts}); !errors.Is(err, ErrBlocked) {
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

// A definition approved without what served it stays unserved when the
// server, configured another way, gets another definition approved
// beside it (a variant, docs/storage.md#approved-variants): etdi run still reports the pin,
// whose earlier definition any program serving it passes as before.
func TestUnservedVariantReported(t *testing.T) {
	ctx := context.Background()
	opts := weatherOptions(t)
	dir := filepath.Dir(opts.Pins)
	approveServer(t, weatherServer("Get the weather."), opts)
	genuine := ResolveOrigin(ctx, Launch{Command: []string{script(t, dir, "weather", "exec weather-server")}, Env: []string{}})
	conn := connInMemory(t, weatherServer("Get the weather in Lima."))
	defer conn.Close()
	l, err := List(ctx, SDKConn(conn), FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check := opts
	check.Origin = genuine
	r, err := Check(ctx, l, check)
	if err != nil {
		t.Fatal(err)
	}
	ap, err := Approve(ctx, r, ApproveOptions{Tools: []string{"get_weather"}})
	if err != nil || len(ap.Approved) != 1 || !ap.Approved[0].Variant || ap.Approved[0].Pin.Served != genuine.Served() {
		t.Fatalf("approve the variant: %v %+v", err, ap)
	}
	if un, err := UnservedPins(genuine, opts); err != nil || len(un) != 1 {
		t.Fatalf("unserved pins with an unserved variant: %v %v", un, err)
	}
}

// A saved listing whose served member is malformed, each with the binding
// it would need, is refused.
func TestReadListingServedMalformed(t *testing.T) {
	l, err := ReadListing([]byte(`{"tools":[` + atkTool + `],"instructions":"Use get_weather."}`))
	if err != nil {
		t.Fatal(err)
	}
	l.Live, l.Served = true, "file /usr/bin/weather sha256:"+strings.Repeat("ab", 32)
	save, err := l.Saver()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := save(&b); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	if !bytes.Contains(data, []byte(`"served": {`)) {
		t.Fatalf("no served member:\n%s", data)
	}
	if l, err = ReadListing(data); err != nil || l.Served == "" {
		t.Fatalf("as saved: %v", err)
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
}
