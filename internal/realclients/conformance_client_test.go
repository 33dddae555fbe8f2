//go:build linux

package realclients

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// clientScript is the client of the suite's client scenarios: MCP
// Inspector's CLI, making the call the scenario asks for, to the test
// server's URL (the suite appends it) directly, or through etdi run --url
// as the Inspector's stdio server, after etdi check --yes of that server
// (each scenario's server is new: its pins are too).
const clientScript = `#!/bin/sh
mode=$1 url=$2
case "$MCP_CONFORMANCE_SCENARIO" in
tools_call) call="--method tools/call --tool-name add_numbers --tool-arg a=5 b=3" ;;
sse-retry) call="--method tools/call --tool-name test_reconnection" ;;
*) call="--method tools/list" ;;
esac
if [ "$mode" = direct ]; then
	exec "$NODE" "$INSPECTOR" "$url" --transport http $call
fi
pins=$(mktemp -d)
"$ETDI" check --trust "$TRUST" --pins "$pins/pins.db" --name scenario --yes --url "$url" >&2 || exit 1
exec "$NODE" "$INSPECTOR" "$GATE" "$pins/pins.db" "$url" $call
`

// gateScript is the Inspector's stdio server: etdi run --url.
const gateScript = `#!/bin/sh
exec "$ETDI" run --trust "$TRUST" --pins "$1" --name scenario --url "$2"
`

// clientScenario runs one client scenario with the client in mode
// (direct or gated) and returns its checks, those that pass or fail (not
// the suite's INFO records of what was sent, which differ by etdi's own
// requests).
func clientScenario(t *testing.T, dir, scenario, mode string) scenarioResult {
	t.Helper()
	out := t.TempDir()
	env := clientEnv(dir, "NODE="+node22(), "ETDI="+etdiBin, "TRUST="+filepath.Join(dir, "trust.json"),
		"INSPECTOR="+filepath.Join(clientsDir, "node_modules", "@modelcontextprotocol", "inspector", "cli", "build", "index.js"),
		"GATE="+filepath.Join(dir, "gate.sh"))
	so, se, _ := run(t, dir, env, node22(), filepath.Join(clientsDir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
		"client", "--command", "sh "+filepath.Join(dir, "client.sh")+" "+mode, "--scenario", scenario, "-o", out)
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(out, e.Name(), "checks.json"))
		if err != nil {
			continue
		}
		var all []check
		if err := json.Unmarshal(data, &all); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		var r scenarioResult
		for _, c := range all {
			if c.Status != "INFO" {
				r.Checks = append(r.Checks, c)
			}
		}
		if len(r.Checks) == 0 {
			r.Failed = "no check passed or failed"
		}
		if !r.passed() {
			stderr, _ := os.ReadFile(filepath.Join(out, e.Name(), "stderr.txt"))
			t.Logf("%s %s: %s\nclient stderr:\n%s", scenario, mode, r.outcome(), short(string(stderr)))
		}
		return r
	}
	return scenarioResult{Failed: fmt.Sprintf("no checks written:\n%s%s", short(so), short(se))}
}

// The suite's client scenarios that need no authorization give, with
// MCP Inspector's CLI as the client, through etdi run --url in front of
// the scenario's test server what they give directly: among them
// sse-retry, whose server ends its event stream in the middle of a call
// and answers on the stream resumed with Last-Event-ID.
func TestConformanceClientScenarios(t *testing.T) {
	t.Parallel()
	needClients(t)
	dir := etdiDir(t)
	for name, script := range map[string]string{"client.sh": clientScript, "gate.sh": gateScript} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	scenarios := []string{"initialize", "tools_call", "sse-retry"}
	// Each scenario has a test server of its own, and the gated client
	// pins it in a database of its own: the scenarios run side by side.
	direct := make([]scenarioResult, len(scenarios))
	gatedRes := make([]scenarioResult, len(scenarios))
	t.Run("scenarios", func(t *testing.T) {
		for i, scenario := range scenarios {
			t.Run(scenario, func(t *testing.T) {
				t.Parallel()
				direct[i] = clientScenario(t, dir, scenario, "direct")
				gatedRes[i] = clientScenario(t, dir, scenario, "gated")
			})
		}
	})
	var table strings.Builder
	same := 0
	for i, scenario := range scenarios {
		d, g := direct[i], gatedRes[i]
		fmt.Fprintf(&table, "%-12s directly: %s\n%-12s gated:    %s\n", scenario, d.outcome(), "", g.outcome())
		if g.outcome() == d.outcome() {
			same++
			continue
		}
		t.Errorf("%s through etdi run --url: %s\n  directly: %s", scenario, g.outcome(), d.outcome())
	}
	t.Logf("client scenarios (%d of %d the same):\n%s", same, len(scenarios), table.String())
}
