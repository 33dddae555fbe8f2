package action

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/internal/tuftest"
	"go.yaml.in/yaml/v3"
)

type exampleWorkflow struct {
	On   map[string]any `yaml:"on"`
	Jobs map[string]struct {
		Steps []actionStep `yaml:"steps"`
	} `yaml:"jobs"`
}

// setupCommands are the commands of a workflow's header comment: lines
// "#   etdi ..." and "#   cp A B", in order, split on spaces.
func setupCommands(text string) [][]string {
	var out [][]string
	for _, m := range regexp.MustCompile(`(?m)^#\s+((?:etdi|cp) [^\n]*)$`).FindAllStringSubmatch(text, -1) {
		line := strings.TrimSuffix(strings.TrimSpace(m[1]), `\`)
		out = append(out, strings.Fields(line))
	}
	return out
}

// etdiEnv runs etdi in dir with the audit key's password, as the set-up
// commands say.
func etdiEnv(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(etdiBin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "ETDI_PASSWORD=" + password, "ETDI_AUDIT_PASSWORD=audit-" + password}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// mcpConfig is a .vscode/mcp.json of the fixture server, serving the demo
// weather tools with the bundle at bundle in-band, and of extra servers.
func mcpConfig(t *testing.T, bundle string, extra string) string {
	t.Helper()
	fixture := filepath.Join(repoRoot, "testdata", "mcp", "fixture-server.mjs")
	if _, err := os.Stat(filepath.Join(repoRoot, "testdata", "mcp", "node_modules", "@modelcontextprotocol")); err != nil {
		t.Skip("the fixture server's packages are not installed (cd testdata/mcp && npm ci)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return `{"servers": {"weather": {"command": "node", "args": [` + q(fixture) + `], "env": {"FIXTURE_BUNDLE": ` + q(bundle) + `}}` + extra + `}}`
}

// The consumer workflow checks a pull request against the base branch's
// trust policy, lockfile and lockfile key, checked out after the pull
// request, never against files the pull request can change; its set-up
// commands work as written; and run as the workflow runs it, a pull
// request that adds an unapproved server and brings its own policy,
// lockfile and key (which would pass against themselves) fails, while an
// unchanged one passes.
func TestConsumerWorkflowChecksBaseBranch(t *testing.T) {
	t.Parallel()
	text := readFile(t, filepath.Join(repoRoot, "examples", "workflows", "consumer-check.yml"))
	var w exampleWorkflow
	if err := yaml.Unmarshal([]byte(text), &w); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.On["pull_request_target"]; ok {
		t.Fatal("pull_request_target runs the check with write permissions on the pull request's servers")
	}
	var steps []actionStep
	for _, j := range w.Jobs {
		steps = append(steps, j.Steps...)
	}
	// The base branch's checkout: after the pull request's, at the base
	// commit, to a path of its own.
	base, prCheckout, etdiStep := -1, -1, -1
	for i, s := range steps {
		switch {
		case strings.HasPrefix(s.Uses, "actions/checkout@") && strings.Contains(s.With["ref"], "github.event.pull_request.base.sha"):
			base = i
		case strings.HasPrefix(s.Uses, "actions/checkout@") && s.With["ref"] == "" && s.With["path"] == "":
			prCheckout = i
		case strings.HasPrefix(s.Uses, "etdi-dev/etdi@"):
			etdiStep = i
		}
	}
	if base < 0 || prCheckout < 0 || etdiStep < 0 || !(prCheckout < base && base < etdiStep) {
		t.Fatalf("steps: pull request checkout %d, base checkout %d, etdi %d", prCheckout, base, etdiStep)
	}
	basePath := steps[base].With["path"]
	if basePath == "" || steps[base].With["persist-credentials"] != "false" {
		t.Fatalf("base checkout: %v", steps[base].With)
	}
	with := steps[etdiStep].With
	args := strings.Fields(with["args"])
	var lock, key string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--lock":
			lock = args[i+1]
		case "--lock-key":
			key = args[i+1]
		}
	}
	if with["pins"] != "" || lock == "" || key == "" {
		t.Fatalf("the check does not use a signed lockfile: pins %q, args %q", with["pins"], with["args"])
	}
	for name, p := range map[string]string{"trust": with["trust"], "--lock": lock, "--lock-key": key} {
		if !strings.HasPrefix(p, basePath+"/") {
			t.Errorf("%s %q is not from the base branch's checkout %s", name, p, basePath)
		}
	}

	// The base branch: set up with the comment's commands, as written.
	setup := t.TempDir()
	mustEtdi(t, setup, "key", "generate", "--out", filepath.Join(setup, "acme"))
	copyFile(t, demodata("weather.manifest.json"), filepath.Join(setup, "weather.manifest.json"))
	bundle := filepath.Join(setup, "weather.etdi.json")
	mustEtdi(t, setup, "sign", "--key", "acme.key", "--out", bundle, "weather.manifest.json")
	os.MkdirAll(filepath.Join(setup, ".vscode"), 0o755)
	os.WriteFile(filepath.Join(setup, ".vscode", "mcp.json"), []byte(mcpConfig(t, bundle, "")), 0o644)
	cmds := setupCommands(text)
	if len(cmds) < 3 {
		t.Fatalf("set-up commands: %q", cmds)
	}
	for _, c := range cmds {
		if c[0] == "cp" {
			copyFile(t, filepath.Join(setup, c[1]), filepath.Join(setup, c[2]))
			continue
		}
		if out, code := etdiEnv(t, setup, c[1:]...); code != 0 {
			t.Fatalf("set-up command %q: exit %d\n%s", c, code, out)
		}
	}
	for _, f := range []string{lock, key, with["trust"]} {
		if _, err := os.Stat(filepath.Join(setup, strings.TrimPrefix(f, basePath+"/"))); err != nil {
			t.Fatalf("the set-up commands do not make %s: %v", f, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(setup, ".etdi", "etdi.lock.json")); !strings.Contains(string(b), `"generation"`) || !strings.Contains(string(b), `"signature"`) {
		t.Fatalf("the lockfile is not signed with a generation:\n%s", b)
	}

	// A workspace as the runner leaves it: the pull request, then the
	// base branch's .etdi at basePath.
	workspace := func(t *testing.T, config string) string {
		ws := t.TempDir()
		for _, f := range []string{"trust.json", "etdi.lock.json", "team-audit.pub"} {
			copyFile(t, filepath.Join(setup, ".etdi", f), filepath.Join(ws, ".etdi", f))
			copyFile(t, filepath.Join(setup, ".etdi", f), filepath.Join(ws, basePath, ".etdi", f))
		}
		os.MkdirAll(filepath.Join(ws, ".vscode"), 0o755)
		os.WriteFile(filepath.Join(ws, ".vscode", "mcp.json"), []byte(config), 0o644)
		return ws
	}
	inputs := func() map[string]string {
		in := map[string]string{}
		for k, v := range with {
			if strings.Contains(v, "${{") {
				if k != "upload-sarif" {
					t.Fatalf("input %s holds an expression: %q", k, v)
				}
				v = "false" // a fork's pull request
			}
			in[k] = v
		}
		return in
	}

	// Unchanged: passes.
	ws := workspace(t, mcpConfig(t, bundle, ""))
	res := runAction(t, ws, inputs(), nil)
	if res.Failed != "" || res.Outputs["exit-code"] != "0" {
		t.Fatalf("unchanged pull request: failed %q, outputs %v\n%s", res.Failed, res.Outputs, res.Log)
	}

	// The pull request adds a server and approves it in its own .etdi:
	// unsigned allowed, its own pin database exported to the lockfile and
	// signed with its own key.
	fixture := filepath.Join(repoRoot, "testdata", "mcp", "fixture-server.mjs")
	evil := `, "notes": {"command": "node", "args": [` + strings.TrimSpace(mustJSON(fixture)) + `, "notes"], "env": {"FIXTURE_MODE": "workspace"}}`
	ws = workspace(t, mcpConfig(t, bundle, evil))
	os.Remove(filepath.Join(ws, ".etdi", "team-audit.pub"))
	for _, c := range [][]string{
		{"trust", "unsigned", "--policy", ".etdi/trust.json", "warn"},
		{"check", "--trust", ".etdi/trust.json", "--pins", "evil.db", "--config", ".vscode/mcp.json", "--yes"},
		{"pin", "export", "--pins", "evil.db", "--lock", ".etdi/etdi.lock.json", "--sign", "--key", ".etdi/team-audit.key"},
	} {
		if out, code := etdiEnv(t, ws, c...); code != 0 {
			t.Fatalf("the pull request's own approval %q: exit %d\n%s", c, code, out)
		}
	}
	os.Remove(filepath.Join(ws, "evil.db"))
	os.Remove(filepath.Join(ws, ".etdi", "team-audit.key"))
	// Against its own files the pull request would pass.
	if out, code := etdiEnv(t, ws, "check", "--trust", ".etdi/trust.json", "--lock", ".etdi/etdi.lock.json", "--lock-key", ".etdi/team-audit.pub", "--config", ".vscode/mcp.json"); code != 0 {
		t.Fatalf("the attack needs the pull request's own files to pass: exit %d\n%s", code, out)
	}
	res = runAction(t, ws, inputs(), nil)
	if res.Outputs["exit-code"] == "0" || res.Outputs["exit-code"] == "" || res.Failed != "Fail on etdi check findings" {
		t.Fatalf("a pull request approving its own server passed: failed %q, outputs %v\n%s", res.Failed, res.Outputs, res.Log)
	}

	// The whole workflow as written (workflowrun_test.go), for a pull
	// request from a fork: its Report step runs after the check, pass or
	// fail.
	fork := map[string]string{"github.event_name": "pull_request", "github.repository": "team/app",
		"github.event.pull_request.head.repo.full_name": "someone/app", "github.event.pull_request.base.sha": strings.Repeat("b", 40),
		"github.sha": strings.Repeat("c", 40)}
	file := filepath.Join(repoRoot, "examples", "workflows", "consumer-check.yml")
	wres := runWorkflow(t, file, workspace(t, mcpConfig(t, bundle, "")), workflowRun{contexts: fork})
	if wres.Failed != "" || !strings.Contains(wres.Log, "etdi check exited 0 with 0 finding(s)") {
		t.Fatalf("the workflow on an unchanged pull request: failed %q\n%s", wres.Failed, wres.Log)
	}
	wres = runWorkflow(t, file, ws, workflowRun{contexts: fork})
	if !strings.HasPrefix(wres.Failed, "etdi: Check the configured MCP servers") || !regexp.MustCompile(`etdi check exited 1[0-9] with [1-9]`).MatchString(wres.Log) {
		t.Fatalf("the workflow on the pull request approving its own server: failed %q\n%s", wres.Failed, wres.Log)
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The provider workflow's trust commands work as written, the trusted
// root fetched through TUF ('etdi trust sigstore-root --update' pointed at
// a loopback TUF repository with --tuf-mirror and --tuf-root, the one
// substitution), and the client that runs them verifies the workflow's
// bundle (TestProviderWorkflowRuns signs one as the workflow does).
func TestProviderWorkflowTrustCommands(t *testing.T) {
	t.Parallel()
	text := readFile(t, filepath.Join(repoRoot, "examples", "workflows", "provider-release.yml"))
	// The comment's command, its continuation lines joined.
	joined := regexp.MustCompile(`\\\n#\s+`).ReplaceAllString(text, "")
	cmds := setupCommands(joined)
	if len(cmds) == 0 {
		t.Fatal("no trust command in the provider workflow")
	}
	ws := t.TempDir()
	in := sigstoretest.New(t)
	repo := tuftest.New(t, in.TrustedRoot(t))
	tufRoot := repo.WriteRoot(t, t.TempDir(), "tuf-root.json")
	if strings.Join(cmds[0], " ") != "etdi trust sigstore-root --update" {
		t.Fatalf("the first command does not fetch the trusted root: %q", cmds[0])
	}
	cmds[0] = append(cmds[0], "--tuf-mirror", repo.URL, "--tuf-root", tufRoot)
	for _, c := range cmds {
		if out, code := etdiEnv(t, ws, c[1:]...); code != 0 {
			t.Fatalf("%q: exit %d\n%s", c, code, out)
		}
	}
	out, _ := etdiEnv(t, ws, "trust", "list", "--json")
	if !strings.Contains(out, "acme/weather-mcp") {
		t.Fatalf("trust list: %s", out)
	}
}
