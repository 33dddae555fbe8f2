package main

import (
	"bytes"
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
		m, ok, err := s.EtdiMeta()
		ts.Check(err)
		if !ok {
			ts.Fatalf("%s has no dev.etdi metadata", args[0])
		}
		bundle, err := os.ReadFile(ts.MkAbs(args[1]))
		ts.Check(err)
		if m.Bundle != args[2] || m.Digest != registry.Digest(bundle) {
			ts.Fatalf("%s names %s %s, want %s %s", args[0], m.Bundle, m.Digest, args[2], registry.Digest(bundle))
		}
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
