//go:build linux

package realclients

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// inspectorCalls are MCP Inspector CLI one-shot calls against
// server-everything: each is a session of its own that makes one request
// (after initialize), listing nothing first.
var inspectorCalls = [][]string{
	{"--method", "tools/list"},
	{"--method", "tools/call", "--tool-name", "get-sum", "--tool-arg", "a=2", "b=3"},
	{"--method", "tools/call", "--tool-name", "no-such-tool"},
	{"--method", "prompts/get", "--prompt-name", "args-prompt", "--prompt-args", "city=Paris", "state=TX"},
	{"--method", "resources/read", "--uri", "demo://resource/static/document/architecture.md"},
	{"--method", "resources/read", "--uri", "demo://resource/dynamic/text/1"},
	{"--method", "resources/read", "--uri", "demo://resource/no/such/thing"},
}

// clockTime is the time of day server-everything writes into the text of
// a dynamic resource: the same call made twice differs by it alone.
var clockTime = regexp.MustCompile(`\b\d{1,2}:\d{2}:\d{2}\s?[AP]M\b`)

// mcpError is the error code the Inspector prints of a JSON-RPC error.
var mcpError = regexp.MustCompile(`MCP error (-?\d+)`)

// inspector runs one MCP Inspector CLI call (server: a program, or a URL
// and --transport http) and returns what is compared: the result printed,
// or the exit code and the JSON-RPC error code (the message is the
// server's or etdi's own words).
func inspector(t *testing.T, home string, server, call []string) string {
	t.Helper()
	// The Inspector's CLI proper (cli.js, the launcher, starts it with a
	// second Node.js process and takes a "--" among a configuration's
	// arguments for the end of its own options).
	argv := append([]string{node22(), filepath.Join(clientsDir, "node_modules", "@modelcontextprotocol", "inspector", "cli", "build", "index.js")}, server...)
	argv = append(argv, call...)
	so, se, code := run(t, home, clientEnv(home), argv...)
	if code != 0 {
		m := mcpError.FindStringSubmatch(se)
		if m == nil {
			return fmt.Sprintf("exit %d, no MCP error: %s", code, strings.TrimSpace(se))
		}
		return "error " + m[1]
	}
	var v any
	if err := json.Unmarshal([]byte(so), &v); err != nil {
		return "not JSON: " + so
	}
	// A tool's error result that carries a JSON-RPC error code (the
	// TypeScript SDK answers an unknown tool so) is that error.
	var r struct {
		IsError bool `json:"isError"`
		Content []struct{ Text string }
	}
	if json.Unmarshal([]byte(so), &r) == nil && r.IsError && len(r.Content) == 1 {
		if m := mcpError.FindStringSubmatch(r.Content[0].Text); m != nil {
			return "error " + m[1]
		}
	}
	b, _ := json.MarshalIndent(v, "", " ")
	return clockTime.ReplaceAllString(string(b), "TIME")
}

// MCP Inspector's CLI one-shot calls give through etdi run, as the stdio
// server of the Inspector's configuration and as a Streamable HTTP
// endpoint (--listen, one gate for every call), what they give from
// server-everything directly.
func TestInspectorOneShot(t *testing.T) {
	t.Parallel()
	needClients(t)
	dir := etdiDir(t)
	etdi(t, dir, "check", "--trust", "trust.json", "--pins", "pins.db", "--name", "everything", "--yes", "--server", "--", everything)

	// The Inspector's stdio server is a program and its arguments: etdi
	// run's are in a script (the Inspector would take the "--" before the
	// server's command for its own).
	gated := filepath.Join(dir, "gated.sh")
	script := fmt.Sprintf("#!/bin/sh\nexec '%s' run --trust '%s' --pins '%s' --name everything -- '%s'\n",
		etdiBin, filepath.Join(dir, "trust.json"), filepath.Join(dir, "pins.db"), everything)
	if err := os.WriteFile(gated, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	url, g := gate(t, dir, "--name", "everything", "--", everything)

	// The calls are independent sessions: they run side by side (as many
	// at once as -parallel allows), each compared on its own.
	var same, total atomic.Int32
	t.Run("calls", func(t *testing.T) {
		for _, call := range inspectorCalls {
			name := strings.Join(call[1:], " ")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				want := inspector(t, dir, []string{everything}, call)
				for _, via := range []struct {
					name   string
					server []string
				}{
					{"etdi run (stdio)", []string{gated}},
					{"etdi run --listen", []string{url, "--transport", "http"}},
				} {
					total.Add(1)
					got := inspector(t, dir, via.server, call)
					// A resource that is not there may be answered with the
					// protocol's own code for it, where the server uses another.
					if got == want || call[1] == "resources/read" && strings.HasPrefix(want, "error ") && got == "error -32002" {
						same.Add(1)
						continue
					}
					t.Errorf("%s through %s:\n%s\ndirectly:\n%s", name, via.name, short(got), short(want))
				}
			})
		}
	})
	t.Logf("%d of %d one-shot calls through etdi run the same as directly", same.Load(), total.Load())
	if t.Failed() {
		t.Logf("etdi run --listen:\n%s", g.output())
	}
}

// short bounds what a failure prints of a long result.
func short(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}
