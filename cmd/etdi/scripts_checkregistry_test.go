package main

import (
	"net/http"
	"net/http/httptest"

	"github.com/rogpeppe/go-internal/testscript"
)

// The fixtures of the check_registry_* scripts, which check servers that
// the real MCP Registry lists (scripts_registry_test.go).
//
// Commands:
//
//	checkregistry-serve VAR DIR   serves the files of DIR over http on 127.0.0.1,
//	                              where a provider publishes its bundle beside the
//	                              release, and sets VAR to the server's URL; the
//	                              server stops when the script ends
func init() {
	scriptCmds["checkregistry-serve"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: checkregistry-serve VAR DIR")
		}
		srv := httptest.NewServer(http.FileServer(http.Dir(ts.MkAbs(args[1]))))
		ts.Defer(srv.Close)
		ts.Setenv(args[0], srv.URL)
	}
}
