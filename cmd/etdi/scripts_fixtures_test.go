package main

import (
	"os"
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"
)

// The fixtures every subject's scripts share. A subject's own fixtures
// live in its scripts_SUBJECT_test.go and add to scriptCmds the same way.
//
// Environment of every script:
//
//	$MCPDIR    testdata/mcp: real MCP servers from npm (after neednode)
//	$FIXTURE   testdata/mcp/fixture-server.mjs, the scriptable fixture server
//	$NODEBIN   testdata/mcp/node_modules/.bin
//
// Commands:
//
//	neednode                   installs testdata/mcp's npm packages once per test run
//	pinenv                     puts in $WORK the keys acme.key, acme2.key, evil.key
//	                           (password $PASSWORD) with their .pub files, trust.json
//	                           trusting acme (acme, acme2) and evil and blocking
//	                           unsigned tools, v1.manifest.json (the demo weather
//	                           manifest), live-ok.json and live-rugpull.json
//	echoserver VAR             builds testdata/echoserver once and sets VAR to its path
//	weather FILE [BUILD]       writes the in-band example server (built with
//	                           -X main.build=BUILD) to FILE, mode 0755
//	otherfixture FILE TAG      writes a copy of the fixture server that is another
//	                           artifact (its digest differs for each TAG) to FILE
func init() {
	scriptSetups = append(scriptSetups, func(env *testscript.Env) error {
		env.Setenv("MCPDIR", mcpDir)
		env.Setenv("FIXTURE", fixtureJS)
		env.Setenv("NODEBIN", nodeBinDir)
		return nil
	})
	scriptCmds["neednode"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 0 {
			ts.Fatalf("usage: neednode")
		}
		ts.Check(mcpNpm.ensure())
	}
	scriptCmds["pinenv"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 0 {
			ts.Fatalf("usage: pinenv")
		}
		dir := ts.Getenv("WORK")
		ts.Check(copyPinKeys(dir))
		for name, src := range map[string]string{
			"v1.manifest.json":  "demodata/weather.manifest.json",
			"live-ok.json":      "demodata/live-ok.json",
			"live-rugpull.json": "demodata/live-rugpull.json",
		} {
			b, err := os.ReadFile(src)
			ts.Check(err)
			ts.Check(os.WriteFile(filepath.Join(dir, name), b, 0o644))
		}
	}
	scriptCmds["echoserver"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: echoserver VAR")
		}
		bin, err := buildEchoServer()
		ts.Check(err)
		ts.Setenv(args[0], bin)
	}
	scriptCmds["weather"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) < 1 || len(args) > 2 {
			ts.Fatalf("usage: weather FILE [BUILD]")
		}
		build := ""
		if len(args) == 2 {
			build = args[1]
		}
		src, err := buildWeatherOnce(build)
		ts.Check(err)
		b, err := os.ReadFile(src)
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(args[0]), b, 0o755))
	}
	scriptCmds["otherfixture"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: otherfixture FILE TAG")
		}
		src, err := os.ReadFile(fixtureJS)
		ts.Check(err)
		path := ts.MkAbs(args[0])
		ts.Check(os.WriteFile(path, append(src, "\n// another artifact: "+args[1]+"\n"...), 0o644))
		link := filepath.Join(filepath.Dir(path), "node_modules")
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			ts.Check(os.Symlink(filepath.Join(mcpDir, "node_modules"), link))
		}
	}
}
