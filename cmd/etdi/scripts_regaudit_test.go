package main

import (
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/etdi-dev/etdi/registry"
	"github.com/rogpeppe/go-internal/testscript"
)

// The fixtures of the scripts about etdi registry audit
// (registry_audit_*.txtar), beside the registry fixture of
// scripts_registry_test.go.
//
// Commands:
//
//	regaudit-host VAR DIR           starts an HTTP server on 127.0.0.1 serving the files
//	                                of the script's directory DIR as a release page
//	                                serves bundles (a file replaced in DIR is served
//	                                replaced); sets VAR to its URL
//	regaudit-attach IN BUNDLE URL OUT
//	                                writes the server.json IN to OUT with its dev.etdi
//	                                metadata naming the bundle at URL with the SHA-256
//	                                of the file BUNDLE, as a provider's release does
func init() {
	scriptCmds["regaudit-host"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: regaudit-host VAR DIR")
		}
		dir := ts.MkAbs(args[1])
		ts.Check(os.MkdirAll(dir, 0o755))
		srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
		ts.Defer(srv.Close)
		ts.Setenv(args[0], srv.URL)
	}
	scriptCmds["regaudit-attach"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 4 {
			ts.Fatalf("usage: regaudit-attach IN BUNDLE URL OUT")
		}
		bundle, err := os.ReadFile(ts.MkAbs(args[1]))
		ts.Check(err)
		out, err := registry.SetEtdiMeta([]byte(ts.ReadFile(args[0])), registry.EtdiMeta{Bundle: args[2], Digest: registry.Digest(bundle)})
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(args[3]), out, 0o644))
	}
}
