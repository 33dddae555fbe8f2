//go:build linux

package realclients

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

var (
	refOnce sync.Once
	refURL  string
	refErr  string
)

// referenceServer starts the conformance suite's reference server (its
// "everything" server, testdata/clients/conformance-server) once per
// package and returns its endpoint.
func referenceServer(t *testing.T) string {
	t.Helper()
	needClients(t)
	refOnce.Do(func() {
		dir := filepath.Join(clientsDir, "conformance-server")
		home, err := os.MkdirTemp("", "etdi-conformance-server-")
		if err != nil {
			refErr = err.Error()
			return
		}
		p := start(t, dir, clientEnv(home, "PORT=0"),
			node22(), filepath.Join(clientsDir, "node_modules", "tsx", "dist", "cli.mjs"), "everything-server.ts")
		cleanupMu.Lock()
		cleanups = append(cleanups, func() { p.stop(); os.RemoveAll(home) })
		cleanupMu.Unlock()
		refErr = "it printed no endpoint"
		u := p.waitLine(t, "MCP endpoint: http://localhost:")
		port, ok := strings.CutSuffix(u, "/mcp")
		if !ok {
			refErr = "the reference server printed the endpoint " + u
			return
		}
		refURL = "http://127.0.0.1:" + port + "/mcp"
	})
	if refURL == "" {
		t.Fatal("the conformance reference server did not start: " + refErr)
	}
	return refURL
}

// check is one conformance check's outcome.
type check struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Message string `json:"errorMessage"`
}

// scenarioResult is one scenario's checks, or why it did not run.
type scenarioResult struct {
	Checks []check
	Failed string // the run's own failure, when it wrote no checks
}

// outcome is what the comparison looks at: each check's id and status,
// each pair once.
func (r scenarioResult) outcome() string {
	if r.Failed != "" {
		return "not run: " + r.Failed
	}
	var s []string
	for _, c := range r.Checks {
		s = append(s, c.ID+"="+c.Status)
	}
	slices.Sort(s)
	return strings.Join(slices.Compact(s), " ") // a check made of each of two sessions is one outcome
}

// passed says whether no check failed.
func (r scenarioResult) passed() bool {
	if r.Failed != "" || len(r.Checks) == 0 {
		return false
	}
	for _, c := range r.Checks {
		if c.Status == "FAILURE" {
			return false
		}
	}
	return true
}

// why is the first failed check's message.
func (r scenarioResult) why() string {
	if r.Failed != "" {
		return r.Failed
	}
	for _, c := range r.Checks {
		if c.Status == "FAILURE" {
			return c.ID + ": " + c.Message
		}
	}
	return ""
}

var (
	summaryLine = regexp.MustCompile(`(?m)^[✓✗] ([a-z0-9-]+): (\d+) passed, (\d+) failed$`)
	resultDir   = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)
)

// conformance runs the suite's server scenarios (every one: --suite all,
// or the one named) against url and returns each scenario's result.
func conformance(t *testing.T, url, scenario string) map[string]scenarioResult {
	t.Helper()
	out := t.TempDir()
	args := []string{node22(), filepath.Join(clientsDir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
		"server", "--url", url, "-o", out}
	if scenario != "" {
		args = append(args, "--scenario", scenario)
	} else {
		args = append(args, "--suite", "all")
	}
	home := t.TempDir()
	so, se, _ := run(t, home, clientEnv(home), args...) // exit 1 when a check fails
	results := map[string]scenarioResult{}
	for _, m := range summaryLine.FindAllStringSubmatch(so, -1) {
		results[m[1]] = scenarioResult{Failed: "no checks written"}
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(out, e.Name(), "checks.json"))
		if err != nil {
			continue // the scenario failed to run: its summary line says so
		}
		var r scenarioResult
		if err := json.Unmarshal(data, &r.Checks); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		results[m[1]] = r
	}
	if len(results) == 0 {
		t.Fatalf("the conformance suite ran no scenario:\n%s%s", so, se)
	}
	return results
}

// The official conformance suite's server scenarios give through etdi run
// --listen in front of the suite's reference server (approved with etdi
// check --yes, unsigned, under the warn policy) what they give directly,
// scenario by scenario and check by check.
func TestConformanceServerScenarios(t *testing.T) {
	t.Parallel()
	ref := referenceServer(t)
	direct := conformance(t, ref, "")
	// The reference server passes every scenario: a failure here is the
	// harness's (or the suite's), not etdi's.
	var names []string
	for name, r := range direct {
		names = append(names, name)
		if !r.passed() {
			t.Errorf("directly, %s fails: %s", name, r.why())
		}
	}
	slices.Sort(names)
	if len(names) < 30 {
		t.Fatalf("the suite ran %d scenarios directly: %v", len(names), names)
	}

	dir := etdiDir(t)
	etdi(t, dir, "check", "--trust", "trust.json", "--pins", "pins.db", "--name", "conformance", "--yes", "--url", ref)
	url, g := gate(t, dir, "--name", "conformance", "--url", ref)
	gated := conformance(t, url, "")

	differ := 0
	for _, name := range names {
		if gated[name].outcome() != direct[name].outcome() {
			differ++
		}
	}
	same := 0
	var table strings.Builder
	for _, name := range names {
		d, gt := direct[name], gated[name]
		if _, ok := gated[name]; !ok {
			gt = scenarioResult{Failed: "not in the suite's output"}
		}
		if gt.outcome() != d.outcome() && differ <= 3 {
			// A loaded machine can fail a check on its own: a difference
			// in a few scenarios counts when it is there again, both ways.
			if rd, rg := conformance(t, ref, name)[name], conformance(t, url, name)[name]; rg.outcome() == rd.outcome() {
				t.Logf("%s: differed once, then the same (%s)", name, rd.outcome())
				d, gt = rd, rg
			}
		}
		status := func(r scenarioResult) string {
			if r.passed() {
				return "pass"
			}
			why := r.why()
			if len(why) > 160 {
				why = why[:160] + "..."
			}
			return "FAIL " + why
		}
		fmt.Fprintf(&table, "%-32s %-5s %s\n", name, status(d), status(gt))
		if gt.outcome() == d.outcome() {
			same++
			continue
		}
		t.Errorf("%s through etdi run --listen: %s\n  directly: %s", name, gt.why(), d.outcome())
	}
	t.Logf("scenario, directly, through etdi run --listen (%d of %d the same):\n%s", same, len(names), table.String())
	if t.Failed() {
		t.Logf("etdi run:\n%s", g.output())
	}
}
