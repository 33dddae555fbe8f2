package main

import (
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/etdi-dev/etdi/registry"
	"github.com/rogpeppe/go-internal/testscript"
)

// The fixtures of the scripts about etdi install.
//
// Commands:
//
//	install-files VAR DIR         serves the files of DIR over http on 127.0.0.1
//	                              until the script ends; sets VAR to its URL
//	install-meta IN BUNDLE URL OUT
//	                              writes the server.json IN to OUT with its dev.etdi
//	                              metadata naming URL and the SHA-256 of the file
//	                              BUNDLE (registry.SetEtdiMeta), as a provider's
//	                              release publishes it
func init() {
	scriptCmds["install-files"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: install-files VAR DIR")
		}
		srv := httptest.NewServer(http.FileServer(http.Dir(ts.MkAbs(args[1]))))
		ts.Defer(srv.Close)
		ts.Setenv(args[0], srv.URL)
	}
	scriptCmds["install-meta"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 4 {
			ts.Fatalf("usage: install-meta IN BUNDLE URL OUT")
		}
		in, err := os.ReadFile(ts.MkAbs(args[0]))
		ts.Check(err)
		bundle, err := os.ReadFile(ts.MkAbs(args[1]))
		ts.Check(err)
		out, err := registry.SetEtdiMeta(in, registry.EtdiMeta{Bundle: args[2], Digest: registry.Digest(bundle)})
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(args[3]), out, 0o644))
	}
}
