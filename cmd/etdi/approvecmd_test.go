package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/hostconfig"
)

// The command printed under a collision or shadowing is the one that
// approves the tool, with absolute paths, or nothing when the inputs hold
// a secret or only a lockfile is used.
func TestApproveCommand(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	sf := &serverFlags{policy: "trust.json"}
	pf := &pinFlags{path: filepath.Join(dir, "pins.db")}
	trust := filepath.Join(wd, "trust.json")
	base := "etdi pin approve --trust " + trust + " --pins " + pf.path
	cfg := filepath.Join(dir, "my config.json")
	for name, tc := range map[string]struct {
		sf   serverFlags
		pf   pinFlags
		t    target
		want string
	}{
		"config":   {*sf, *pf, target{ServerSpec: &guard.ServerSpec{Entry: &hostconfig.Entry{}, Name: "it's"}, location: cfg}, base + " --config '" + cfg + "' --name 'it'\\''s'"},
		"relative": {*sf, *pf, target{ServerSpec: &guard.ServerSpec{Entry: &hostconfig.Entry{}, Name: "x"}, location: "mcp.json"}, base + " --config " + filepath.Join(wd, "mcp.json") + " --name x"},
		"tools":    {serverFlags{policy: "trust.json", name: "files"}, *pf, target{ServerSpec: &guard.ServerSpec{}, toolsFile: "live.json"}, base + " --tools " + filepath.Join(wd, "live.json") + " --name files"},
		"command":  {serverFlags{policy: "trust.json", name: "x"}, *pf, target{ServerSpec: &guard.ServerSpec{Command: []string{"node", "a b.js"}}}, "cd " + wd + " && " + base + " --name x --server -- node 'a b.js'"},
		"url":      {*sf, *pf, target{ServerSpec: &guard.ServerSpec{URL: "https://mcp.example/mcp"}}, base + " --url https://mcp.example/mcp"},
		"etcd":     {*sf, pinFlags{path: "etcd://127.0.0.1:2379/etdi"}, target{ServerSpec: &guard.ServerSpec{URL: "https://mcp.example/mcp"}}, "etdi pin approve --trust " + trust + " --pins etcd://127.0.0.1:2379/etdi --url https://mcp.example/mcp"},
		"bundle":   {serverFlags{policy: "trust.json", bundle: "w.etdi.json"}, *pf, target{ServerSpec: &guard.ServerSpec{URL: "https://mcp.example/mcp"}}, base + " --bundle " + filepath.Join(wd, "w.etdi.json") + " --url https://mcp.example/mcp"},
		"lockfile": {*sf, pinFlags{path: pf.path, lock: "etdi.lock"}, target{ServerSpec: &guard.ServerSpec{URL: "https://mcp.example/mcp"}}, ""},
		"inputs":   {serverFlags{policy: "trust.json", inputs: []string{"token=x"}}, *pf, target{ServerSpec: &guard.ServerSpec{Entry: &hostconfig.Entry{}, Name: "x"}, location: cfg}, ""},
		"headers":  {*sf, *pf, target{ServerSpec: &guard.ServerSpec{URL: "https://mcp.example/mcp", Header: http.Header{"Authorization": {"Bearer x"}}}}, ""},
		"nothing":  {*sf, *pf, target{ServerSpec: &guard.ServerSpec{}}, ""},
	} {
		if got := approveCommand(&tc.sf, &tc.pf, &tc.t); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, tc.want)
		}
	}
	// A command line or URL holding a secret is not printed.
	secretArg := target{ServerSpec: &guard.ServerSpec{Command: []string{"server", "--token=s3cret"}}}
	secretArg.Secrets.Add("s3cret")
	secretURL := target{ServerSpec: &guard.ServerSpec{URL: "https://mcp.example/mcp?key=s3cret"}}
	secretURL.Secrets.Add("s3cret")
	for _, tt := range []target{secretArg, secretURL} {
		if got := approveCommand(sf, pf, &tt); got != "" {
			t.Errorf("secret printed: %s", got)
		}
	}
}
