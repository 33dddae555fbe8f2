package main

import (
	"bytes"
	"context"
	"os"

	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/strictjson"
	"github.com/rogpeppe/go-internal/testscript"
)

// The fixtures of the server.json scripts (manifest_server_json_*,
// sign_server_json_*):
//
//	serverjson-kept OLD NEW
//	    NEW, a server.json etdi sign rewrote, holds every member of OLD in
//	    the same order with the same value (compared as canonical JSON, so
//	    whitespace and escapes do not count), but _meta; in _meta every
//	    member of OLD's the same way but the publisher-provided object, and
//	    in that every member but dev.etdi.
//	serverjson-meta FILE BUNDLE URL
//	    FILE's dev.etdi metadata, read as a client reads it
//	    (registry.ServerJSON.EtdiMeta), names URL and the SHA-256 of the
//	    file BUNDLE.
//	serverjson-published NAME VERSION BUNDLE URL
//	    the registry at $REGISTRY serves NAME at VERSION, read as a client
//	    reads it (registry.Client.Get), with dev.etdi metadata naming URL
//	    and the SHA-256 of the file BUNDLE.
func init() {
	scriptCmds["serverjson-kept"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: serverjson-kept OLD NEW")
		}
		read := func(name string) *strictjson.Value {
			v, err := strictjson.Parse([]byte(ts.ReadFile(name)))
			ts.Check(err)
			return v
		}
		old, now := read(args[0]), read(args[1])
		// Each level is compared with the member etdi writes into left
		// out, then that member one level down.
		for _, inner := range []string{"_meta", registry.PublisherProvidedKey, registry.EtdiKey} {
			keptIn(ts, args[1], old, now, inner)
			if inner == registry.EtdiKey {
				break
			}
			old, now = old.Get(inner), now.Get(inner)
			if old == nil {
				break
			}
			if now == nil {
				ts.Fatalf("%s lost %s", args[1], inner)
			}
		}
	}
	scriptCmds["serverjson-meta"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 3 {
			ts.Fatalf("usage: serverjson-meta FILE BUNDLE URL")
		}
		s, err := registry.ParseServerJSON([]byte(ts.ReadFile(args[0])))
		ts.Check(err)
		checkEtdiMeta(ts, args[0], s, args[1], args[2])
	}
	scriptCmds["serverjson-published"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 4 {
			ts.Fatalf("usage: serverjson-published NAME VERSION BUNDLE URL")
		}
		c := &registry.Client{BaseURL: ts.Getenv("REGISTRY")}
		e, err := c.Get(context.Background(), args[0], args[1])
		ts.Check(err)
		if e.Server.Name != args[0] || e.Server.Version != args[1] {
			ts.Fatalf("the registry answered %s %s", e.Server.Name, e.Server.Version)
		}
		checkEtdiMeta(ts, "the registry's entry", e.Server, args[2], args[3])
	}
}

// checkEtdiMeta fails the script unless s's dev.etdi metadata names url
// and the SHA-256 of the file bundle.
func checkEtdiMeta(ts *testscript.TestScript, what string, s *registry.ServerJSON, bundle, url string) {
	m, ok, err := s.EtdiMeta()
	ts.Check(err)
	if !ok {
		ts.Fatalf("%s has no dev.etdi metadata", what)
	}
	b, err := os.ReadFile(ts.MkAbs(bundle))
	ts.Check(err)
	if m.Bundle != url || m.Digest != registry.Digest(b) {
		ts.Fatalf("%s names %s %s, want %s %s", what, m.Bundle, m.Digest, url, registry.Digest(b))
	}
}

// keptIn checks that every member of the object old is in now, in the
// same order and, but inner, with the same canonical value; now may have
// more members.
func keptIn(ts *testscript.TestScript, file string, old, now *strictjson.Value, inner string) {
	if old.Kind != strictjson.Object || now.Kind != strictjson.Object {
		ts.Fatalf("%s: not an object", file)
	}
	j := 0
	for _, m := range old.Members {
		for j < len(now.Members) && now.Members[j].Name != m.Name {
			j++
		}
		if j == len(now.Members) {
			ts.Fatalf("%s: member %q lost or moved", file, m.Name)
		}
		if m.Name != inner && !bytes.Equal(strictjson.AppendCanonical(nil, m.Value), strictjson.AppendCanonical(nil, now.Members[j].Value)) {
			ts.Fatalf("%s: member %q changed", file, m.Name)
		}
	}
}
